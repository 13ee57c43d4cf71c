package group

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes its coordinators and partitions: nothing may be left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

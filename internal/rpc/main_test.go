package rpc

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes its transports: no connection, writer or reader goroutine may outlive them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

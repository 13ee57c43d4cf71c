//go:build !linux

package kafka

import (
	"bufio"
	"net"

	"github.com/cairn-io/cairn/internal/partition"
)

// writeFileRange copies the range through w: sendfile is used on Linux only (and the
// storage layer only hands out file ranges there).
func writeFileRange(w *bufio.Writer, _ net.Conn, s partition.FileRange) error {
	return copyFileRange(w, s)
}

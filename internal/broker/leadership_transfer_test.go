package broker

import (
	"bytes"
	"testing"
)

func TestTransferLeaderCodec(t *testing.T) {
	for _, c := range []struct {
		group  uint64
		target int32
	}{{0, 1}, {1, 3}, {1 << 40, 1<<31 - 1}} {
		g, tg, err := decodeTransferLeader(encodeTransferLeader(c.group, c.target))
		if err != nil || g != c.group || tg != c.target {
			t.Errorf("%+v: decoded %d %d %v", c, g, tg, err)
		}
	}
	good := encodeTransferLeader(7, 2)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"other version":  append([]byte{9}, good[1:]...),
		"no target":      good[:2],
		"trailing":       append(bytes.Clone(good), 0),
		"target zero":    encodeTransferLeader(7, 0),
		"target too big": append([]byte{1, 7}, 0x80, 0x80, 0x80, 0x80, 0x10),
		"bad varint":     {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, _, err := decodeTransferLeader(b); err == nil {
			t.Errorf("%s: %x decoded", name, b)
		}
	}
}

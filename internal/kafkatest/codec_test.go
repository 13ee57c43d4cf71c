package kafkatest

import (
	"bytes"
	"testing"
)

func TestCodecsAndTombstones(t *testing.T) {
	for _, c := range Codecs {
		for _, xerial := range []bool{false, true} {
			b := Batch{Keys: [][]byte{[]byte("k"), nil, []byte("t")}, Values: [][]byte{[]byte("v"), []byte("keyless"), nil},
				ProducerID: -1, BaseSequence: -1, Codec: c, XerialSnappy: xerial}
			rb, recs, err := Records(b.Bytes())
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			if Codec(rb.Attributes&7) != c || len(recs) != 3 {
				t.Fatalf("%v: attributes %#x, %d records", c, rb.Attributes, len(recs))
			}
			if string(recs[0].Key) != "k" || recs[1].Key != nil || recs[2].Value != nil || string(recs[1].Value) != "keyless" {
				t.Fatalf("%v: records %+v", c, recs)
			}
			if c == CodecSnappy && bytes.HasPrefix(rb.Records, xerialMagic) != xerial {
				t.Fatalf("xerial framing %v", xerial)
			}
		}
	}
}

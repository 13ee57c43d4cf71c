package security

import (
	"crypto/hmac"
	"encoding/base64"
	"strings"

	"github.com/xdg-go/scram"
)

// librdkafka before 2.6.1 (confluentinc/librdkafka#4895) sends, in its client-final
// message, its own nonce followed by the whole nonce of the server-first message, which
// already starts with it: r=<client nonce><client nonce><server nonce>. Kafka accepted
// that until 3.8.1 and accepts it again since (a nonce that ends with the server's), so
// every kcat, confluent-kafka-python and librdkafka of the Debian and Ubuntu releases in
// use sends it. xdg-go/scram checks the nonce for equality, so that exact form is
// verified here instead, with the same steps (RFC 5802 §3). Only that form: it still
// carries the server's nonce whole, so it replays no more than the standard one does.

// scramTranscript is what the legacy check needs of the first round, kept by clientFirst
// and lookup.
type scramTranscript struct {
	hash        scram.HashGeneratorFcn
	gs2Header   string // "n,," or "y,,": what c= must encode
	clientNonce string
	clientBare  string // client-first-message-bare
	serverFirst string
	nonce       string // client nonce + server nonce, as sent in server-first
	storedKey   []byte
	serverKey   []byte
}

// remember keeps the first round of the exchange: the client-first message (whose
// fields clientFirst has checked) and the server-first reply.
func (t *scramTranscript) remember(clientFirst []string, serverFirst string) {
	t.gs2Header = clientFirst[0] + "," + clientFirst[1] + ","
	t.clientNonce = strings.TrimPrefix(clientFirst[3], "r=")
	t.clientBare = strings.Join(clientFirst[2:], ",")
	t.serverFirst = serverFirst
	if r, _, _ := strings.Cut(serverFirst, ","); strings.HasPrefix(r, "r=") {
		t.nonce = strings.TrimPrefix(r, "r=")
	}
}

// isLibrdkafkaLegacy reports whether the client-final message msg carries librdkafka's
// doubled nonce.
func (t *scramTranscript) isLibrdkafkaLegacy(msg string) bool {
	if t.nonce == "" || t.hash == nil {
		return false
	}
	fields := strings.Split(msg, ",")
	return len(fields) >= 3 && fields[1] == "r="+t.clientNonce+t.nonce
}

// verifyLegacy checks a client-final message in librdkafka's legacy form and returns the
// server-final message. The AuthMessage is the one the client signed: its own
// client-final-message-without-proof, doubled nonce included.
func (t *scramTranscript) verifyLegacy(mechanism, msg string) (string, error) {
	cut := strings.LastIndex(msg, ",p=")
	if cut < 0 {
		return "", invalidf("%s client-final message has no proof", mechanism)
	}
	withoutProof, proofB64 := msg[:cut], msg[cut+len(",p="):]
	cbind, _, _ := strings.Cut(withoutProof, ",")
	if cbind != "c="+base64.StdEncoding.EncodeToString([]byte(t.gs2Header)) {
		return "", invalidf("%s client-final message: channel binding does not match the client-first header", mechanism)
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != len(t.storedKey) {
		return "", invalidf("%s client-final message: malformed proof", mechanism)
	}
	authMessage := []byte(t.clientBare + "," + t.serverFirst + "," + withoutProof)
	clientKey := mac(t.hash, t.storedKey, authMessage)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	h := t.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), t.storedKey) {
		return "", errInvalidProof
	}
	return "v=" + base64.StdEncoding.EncodeToString(mac(t.hash, t.serverKey, authMessage)), nil
}

// errInvalidProof is verifyLegacy's wrong-proof verdict, told apart from malformed input
// as the library's scram.ErrInvalidProof is.
var errInvalidProof = invalidf("invalid proof")

func mac(h scram.HashGeneratorFcn, key, data []byte) []byte {
	m := hmac.New(h, key)
	m.Write(data)
	return m.Sum(nil)
}

package security

import (
	"crypto/hmac"
	"encoding/base64"
	"strings"
)

// librdkafka (kcat, confluent-kafka-python and every other binding of it, through at
// least 2.x) answers the server-first message with a client-final nonce of its own nonce
// followed by the whole server nonce, which already begins with its own: r=cnonce +
// cnonce + snonce. RFC 5802 wants r=cnonce + snonce exactly, and xdg-go/scram refuses
// anything else, but Kafka's ScramSaslServer only checks that the nonce ends with the one
// it sent, so librdkafka works against Kafka. Cairn accepts what Kafka accepts. Nothing
// is lost: the proof covers the server-first message, so it is bound to the server nonce
// whatever the client repeats before it.

// remember keeps what checking a client-final message needs, once client-first (fields
// and msg) has been answered with reply.
func (e *scramExchange) remember(fields []string, msg, reply string) {
	e.gs2Header = fields[0] + "," + fields[1] + ","
	e.clientFirstBare = msg[len(e.gs2Header):]
	e.serverFirst = reply
	for _, f := range strings.Split(reply, ",") {
		if n, ok := strings.CutPrefix(f, "r="); ok {
			e.serverNonce = n
		}
	}
}

// nonceHasPrefix reports whether client-final msg carries the server nonce with something
// before it: librdkafka's form.
func (e *scramExchange) nonceHasPrefix(msg string) bool {
	fields := strings.Split(msg, ",")
	if e.serverNonce == "" || len(fields) < 3 {
		return false
	}
	n, ok := strings.CutPrefix(fields[1], "r=")
	return ok && n != e.serverNonce && strings.HasSuffix(n, e.serverNonce)
}

// clientFinalWithPrefixedNonce checks a client-final message of librdkafka's form as
// RFC 5802 §3 does, over the message as sent, and answers server-final.
func (e *scramExchange) clientFinalWithPrefixedNonce(msg string) ([]byte, error) {
	fields := strings.Split(msg, ",")
	binding, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return nil, invalidf("%s client-final message does not start with c=", e.mechanism)
	}
	if b, err := base64.StdEncoding.DecodeString(binding); err != nil || string(b) != e.gs2Header {
		return nil, invalidf("%s client-final message: channel binding does not match the client-first header", e.mechanism)
	}
	at := strings.LastIndex(msg, ",p=")
	if at < 0 || !strings.HasPrefix(fields[len(fields)-1], "p=") {
		return nil, invalidf("%s client-final message has no proof", e.mechanism)
	}
	proof, err := base64.StdEncoding.DecodeString(msg[at+len(",p="):])
	if err != nil || len(proof) != e.keyLen {
		return nil, invalidf("%s client-final message: the proof is not %d bytes of base64", e.mechanism, e.keyLen)
	}
	authMessage := []byte(e.clientFirstBare + "," + e.serverFirst + "," + msg[:at])
	clientKey := e.mac(e.cred.StoredKey, authMessage)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	h := e.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), e.cred.StoredKey) {
		if e.unknown {
			return nil, &AuthError{Reason: "unknown user"}
		}
		return nil, &AuthError{Reason: "wrong password"}
	}
	e.principal = UserPrincipal(e.user)
	return []byte("v=" + base64.StdEncoding.EncodeToString(e.mac(e.cred.ServerKey, authMessage))), nil
}

func (e *scramExchange) mac(key, msg []byte) []byte {
	m := hmac.New(e.hash, key)
	m.Write(msg)
	return m.Sum(nil)
}

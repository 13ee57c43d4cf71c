package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestResolveListeners(t *testing.T) {
	got, err := ResolveNode(map[string]string{
		NodeListeners:                   "PLAINTEXT://:9092,SSL://:9094,internal://127.0.0.1:9095",
		NodeAdvertisedListeners:         "SSL://b1.example:19094,PLAINTEXT://b1.example:19092",
		NodeListenerSecurityProtocolMap: "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL",
		NodeSSLCertificateLocation:      "c.pem", NodeSSLKeyLocation: "k.pem", NodeSSLTruststoreLocation: "ca.pem",
		NodeSSLClientAuth: "required",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []ListenerConfig{
		{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: ":9092", Advertised: "b1.example:19092"},
		{Name: "SSL", Protocol: "SSL", Addr: ":9094", Advertised: "b1.example:19094"},
		{Name: "INTERNAL", Protocol: "SSL", Addr: "127.0.0.1:9095", Advertised: "127.0.0.1:9095"},
	}
	if !reflect.DeepEqual(got.Listeners, want) {
		t.Fatalf("listeners:\n got %+v\nwant %+v", got.Listeners, want)
	}
	if got.TLS != (TLSConfig{CertFile: "c.pem", KeyFile: "k.pem", TruststoreFile: "ca.pem", ClientAuth: "required", PrincipalMappingRules: "DEFAULT"}) {
		t.Fatalf("tls: %+v", got.TLS)
	}

	// The single --kafka-addr (and its advertised address) is one PLAINTEXT listener.
	got, err = ResolveNode(map[string]string{NodeKafkaAddr: ":19092", NodeAdvertisedKafkaAddr: "h:19092"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []ListenerConfig{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: ":19092", Advertised: "h:19092"}}; !reflect.DeepEqual(got.Listeners, want) {
		t.Fatalf("kafka.addr listener: %+v", got.Listeners)
	}
}

func TestResolveListenersRefused(t *testing.T) {
	tlsFiles := map[string]string{NodeSSLCertificateLocation: "c.pem", NodeSSLKeyLocation: "k.pem"}
	cases := []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{NodeListeners: "PLAINTEXT://:9092", NodeKafkaAddr: ":9092"}, "listeners and kafka.addr are both set"},
		{map[string]string{NodeListeners: "PLAINTEXT://:9092", NodeAdvertisedKafkaAddr: "h:9092"}, "listeners and advertised.kafka.addr are both set"},
		{map[string]string{NodeListeners: "PLAINTEXT://:9092,SSL://127.0.0.1:9092"}, "both use port 9092"},
		{map[string]string{NodeListeners: "EXTERNAL://:9092"}, "listener EXTERNAL has no security protocol"},
		{map[string]string{NodeListeners: "PLAINTEXT://:9092", NodeAdvertisedListeners: "SSL://h:9094"}, "names listener SSL, which is not in listeners"},
		{map[string]string{NodeAdvertisedListeners: "PLAINTEXT://h:9092"}, "advertised.listeners is set without listeners"},
		{map[string]string{NodeListeners: "SSL://:9094"}, "a TLS listener needs a PEM certificate and key"},
		{map[string]string{NodeListeners: "SASL_SSL://:9094", NodeSSLCertificateLocation: "c.pem"}, "a TLS listener needs a PEM certificate and key"},
		{merge(tlsFiles, map[string]string{NodeListeners: "SSL://:9094", NodeSSLClientAuth: "required"}), "needs ssl.truststore.location"},
		{map[string]string{NodeListeners: "A://:1", NodeListenerSecurityProtocolMap: "A:TLS"}, "unknown security protocol"},
	}
	for _, c := range cases {
		_, err := ResolveNode(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error with %q", c.values, err, c.want)
		}
	}
}

func TestJavaKeystorePropertiesRefusedForPEM(t *testing.T) {
	for _, name := range []string{"ssl.keystore.location", "ssl.keystore.type", "ssl.truststore.type", "ssl.key.password"} {
		r, ok := LookupRefused(name)
		if !ok || !strings.Contains(r.Message(name), "PEM files") {
			t.Errorf("%s: refused %v with %q; want a reason that says PEM", name, ok, r.Message(name))
		}
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

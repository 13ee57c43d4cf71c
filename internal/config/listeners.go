package config

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/cairn-io/cairn/internal/security"
)

// Security protocols of a Kafka listener, as listener.security.protocol.map names them.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

var protocols = []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL}

const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// ListenerConfig is one Kafka listener of a node: where it binds, what it advertises and
// what a client must go through on it.
type ListenerConfig struct {
	Name       string // e.g. PLAINTEXT, INTERNAL
	Protocol   string // one of the Protocol* constants
	Addr       string // host:port it binds
	Advertised string // host:port clients are told, in Metadata; Addr when not advertised
}

// TLS reports whether connections on l start with a TLS handshake.
func (l ListenerConfig) TLS() bool { return l.Protocol == ProtocolSSL || l.Protocol == ProtocolSASLSSL }

// SASL reports whether a client on l must authenticate with SASL.
func (l ListenerConfig) SASL() bool {
	return l.Protocol == ProtocolSASLPlaintext || l.Protocol == ProtocolSASLSSL
}

// TLSConfig is the node's TLS material for its SSL and SASL_SSL listeners: PEM files.
type TLSConfig struct {
	CertFile, KeyFile, TruststoreFile string
	ClientAuth                        string // none, requested or required
	PrincipalMappingRules             string // ssl.principal.mapping.rules, "" is DEFAULT
}

// listenerName is Kafka's rule for a listener name: letters, digits and underscores.
var listenerName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

type listenerAddr struct{ name, addr string }

// parseListenerList parses "NAME://host:port,...". dial says the addresses are ones others
// dial (advertised.listeners).
func parseListenerList(v string, dial bool) ([]listenerAddr, string) {
	items, ok := splitList(v)
	if !ok {
		return nil, "empty item in list"
	}
	var out []listenerAddr
	for _, it := range items {
		name, addr, ok := strings.Cut(it, "://")
		if !ok {
			return nil, fmt.Sprintf("%q is not NAME://host:port", it)
		}
		if !listenerName.MatchString(name) {
			return nil, fmt.Sprintf("listener name %q: use letters, digits and underscores", name)
		}
		name = strings.ToUpper(name)
		if p := checkAddr(addr, dial); p != "" {
			return nil, fmt.Sprintf("listener %s: address %q: %s", name, addr, p)
		}
		for _, o := range out {
			if o.name == name {
				return nil, fmt.Sprintf("listener %s is named twice", name)
			}
		}
		out = append(out, listenerAddr{name, addr})
	}
	return out, ""
}

func listenersSpec(dial bool) spec {
	valid := "comma-separated NAME://host:port list (host may be empty to listen on all interfaces), or empty for one PLAINTEXT listener on kafka.addr"
	if dial {
		valid = "comma-separated NAME://host:port list with dialable hosts, naming listeners of `listeners`, or empty to advertise each listener's bind address"
	}
	return spec{typ: TypeList, valid: valid, check: func(name, v string) (string, error) {
		ls, problem := parseListenerList(v, dial)
		if problem != "" {
			return "", invalid(name, v, valid, problem)
		}
		parts := make([]string, len(ls))
		for i, l := range ls {
			parts[i] = l.name + "://" + l.addr
		}
		return strings.Join(parts, ","), nil
	}}
}

func parseProtocolMap(v string) (map[string]string, string) {
	items, ok := splitList(v)
	if !ok {
		return nil, "empty item in list"
	}
	m := map[string]string{}
	for _, it := range items {
		name, proto, ok := strings.Cut(it, ":")
		if !ok || !listenerName.MatchString(name) {
			return nil, fmt.Sprintf("%q is not NAME:PROTOCOL", it)
		}
		name = strings.ToUpper(name)
		proto = strings.ToUpper(strings.TrimSpace(proto))
		if !slices.Contains(protocols, proto) {
			return nil, fmt.Sprintf("listener %s: unknown security protocol %q (want %s)", name, proto, strings.Join(protocols, ", "))
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Sprintf("listener %s is mapped twice", name)
		}
		m[name] = proto
	}
	return m, ""
}

func protocolMapSpec() spec {
	const valid = "comma-separated NAME:PROTOCOL list, PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
	return spec{typ: TypeList, valid: valid, check: func(name, v string) (string, error) {
		m, problem := parseProtocolMap(v)
		if problem != "" {
			return "", invalid(name, v, valid, problem)
		}
		parts := make([]string, 0, len(m))
		for _, it := range strings.Split(v, ",") {
			n, _, _ := strings.Cut(strings.TrimSpace(it), ":")
			n = strings.ToUpper(n)
			parts = append(parts, n+":"+m[n])
		}
		return strings.Join(parts, ","), nil
	}}
}

func principalRulesSpec() spec {
	const valid = "comma-separated RULE:pattern/replacement/[LU] rules and DEFAULT, as Kafka's ssl.principal.mapping.rules"
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		if _, err := security.ParsePrincipalMappingRules(v); err != nil {
			return "", invalid(name, v, valid, err.Error())
		}
		return v, nil
	}}
}

func pathSpec() spec {
	const valid = "a path to a PEM file, or empty"
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		if hasControl(v) {
			return "", invalid(name, v, valid, "contains control characters")
		}
		return strings.TrimSpace(v), nil
	}}
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// resolveListeners builds the node's listeners from listeners, advertised.listeners and
// listener.security.protocol.map, or one PLAINTEXT listener from kafka.addr and
// advertised.kafka.addr when listeners is not set; and checks what no single property
// can: names and ports used twice, a name without a protocol, an advertised listener not
// listened on, and TLS listeners without a certificate.
func resolveListeners(nodeValues map[string]string, get func(string) string) ([]ListenerConfig, TLSConfig, error) {
	tlsc := TLSConfig{
		CertFile: get(NodeSSLCertificateLocation), KeyFile: get(NodeSSLKeyLocation),
		TruststoreFile: get(NodeSSLTruststoreLocation), ClientAuth: get(NodeSSLClientAuth),
		PrincipalMappingRules: get(NodeSSLPrincipalMappingRules),
	}
	fail := func(format string, args ...any) ([]ListenerConfig, TLSConfig, error) {
		return nil, TLSConfig{}, &Error{Msg: fmt.Sprintf(format, args...)}
	}
	var binds []listenerAddr
	if get(NodeListeners) == "" {
		if nodeValues[NodeAdvertisedListeners] != "" {
			return fail("%s is set without %s: name the listeners it advertises in %s", NodeAdvertisedListeners, NodeListeners, NodeListeners)
		}
		binds = []listenerAddr{{ProtocolPlaintext, get(NodeKafkaAddr)}}
	} else {
		for _, old := range []string{NodeKafkaAddr, NodeAdvertisedKafkaAddr} {
			if nodeValues[old] != "" {
				return fail("%s and %s are both set: with %s, give each listener's address there (and in %s) instead of %s",
					NodeListeners, old, NodeListeners, NodeAdvertisedListeners, old)
			}
		}
		binds, _ = parseListenerList(get(NodeListeners), false)
	}
	protos, _ := parseProtocolMap(get(NodeListenerSecurityProtocolMap))
	advertised := map[string]string{}
	if a := get(NodeAdvertisedListeners); a != "" {
		ads, _ := parseListenerList(a, true)
		for _, ad := range ads {
			if !slices.ContainsFunc(binds, func(b listenerAddr) bool { return b.name == ad.name }) {
				return fail("%s names listener %s, which is not in %s", NodeAdvertisedListeners, ad.name, NodeListeners)
			}
			advertised[ad.name] = ad.addr
		}
	} else if get(NodeListeners) == "" {
		advertised[ProtocolPlaintext] = get(NodeAdvertisedKafkaAddr)
	}
	var out []ListenerConfig
	ports := map[string]string{}
	for _, b := range binds {
		proto, ok := protos[b.name]
		if !ok {
			return fail("listener %s has no security protocol: map it in %s (e.g. %s:SSL)", b.name, NodeListenerSecurityProtocolMap, b.name)
		}
		if _, port, _ := net.SplitHostPort(b.addr); port != "0" {
			if other, dup := ports[port]; dup {
				return fail("listeners %s and %s both use port %s", other, b.name, port)
			}
			ports[port] = b.name
		}
		l := ListenerConfig{Name: b.name, Protocol: proto, Addr: b.addr, Advertised: advertised[b.name]}
		if l.Advertised == "" {
			l.Advertised = b.addr
		}
		if l.TLS() && (tlsc.CertFile == "" || tlsc.KeyFile == "") {
			return fail("listener %s is %s but %s and %s are not both set: a TLS listener needs a PEM certificate and key",
				l.Name, l.Protocol, NodeSSLCertificateLocation, NodeSSLKeyLocation)
		}
		out = append(out, l)
	}
	if tlsc.ClientAuth != "none" && tlsc.TruststoreFile == "" {
		return fail("%s=%s needs %s, the PEM file of the CA that client certificates are verified against",
			NodeSSLClientAuth, tlsc.ClientAuth, NodeSSLTruststoreLocation)
	}
	return out, tlsc, nil
}

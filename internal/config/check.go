package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"unicode"
)

// spec is a property's value rules: its type, the valid values as the docs and error
// messages state them, and the check that returns the canonical form of a value.
type spec struct {
	typ   Type
	valid string
	check func(name, value string) (string, error)
}

// invalid builds the *Error for a value that breaks a property's rules.
func invalid(name, value, valid, problem string) *Error {
	msg := fmt.Sprintf("invalid value %s for %s: %s", shown(value), name, problem)
	if valid != "" {
		msg += "; valid values: " + valid
	}
	return &Error{Msg: msg}
}

// refusedValue builds the *Error for a well-formed value that Cairn does not enforce.
func refusedValue(name, value, why string) *Error {
	return &Error{Msg: fmt.Sprintf("%s=%s is refused rather than silently ignored: %s", name, shown(value), why)}
}

func boolSpec() spec {
	const valid = "true, false"
	return spec{typ: TypeBool, valid: valid, check: func(name, v string) (string, error) {
		switch t := strings.TrimSpace(v); {
		case strings.EqualFold(t, "true"):
			return "true", nil
		case strings.EqualFold(t, "false"):
			return "false", nil
		}
		return "", invalid(name, v, valid, "not a boolean")
	}}
}

func typeBounds(t Type) (bits int, lo, hi int64) {
	switch t {
	case TypeShort:
		return 16, math.MinInt16, math.MaxInt16
	case TypeInt:
		return 32, math.MinInt32, math.MaxInt32
	default:
		return 64, math.MinInt64, math.MaxInt64
	}
}

// numSpec accepts whole numbers of type t in [lo, hi]; with unlimited, -1 is also
// accepted and means "no limit".
func numSpec(t Type, lo, hi int64, unlimited bool) spec {
	bits, tlo, thi := typeBounds(t)
	rng := fmt.Sprintf("%d to %d", lo, hi)
	if hi == thi {
		rng = fmt.Sprintf(">= %d", lo)
	}
	valid := rng
	if unlimited {
		valid = "-1 (unlimited) or " + rng
	}
	return spec{typ: t, valid: valid, check: func(name, v string) (string, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
		if errors.Is(err, strconv.ErrRange) {
			return "", invalid(name, v, valid, fmt.Sprintf("out of range for %s %s (%d to %d)", article(t.String()), t, tlo, thi))
		}
		if err != nil {
			return "", invalid(name, v, valid, fmt.Sprintf("not a whole number (%s %s)", article(t.String()), t))
		}
		if (unlimited && n == -1) || (n >= lo && n <= hi) {
			return strconv.FormatInt(n, 10), nil
		}
		return "", invalid(name, v, valid, "out of range")
	}}
}

// replicaSelectorSpec accepts Kafka's two selector classes, exactly as spelled (Java class
// names are case-sensitive), or the empty value (unset: Kafka's default, the leader). Any
// other class is one Cairn cannot load, so it is refused rather than ignored.
func replicaSelectorSpec() spec {
	valid := `"" (leader only), ` + LeaderSelector + ", " + RackAwareReplicaSelector
	return spec{typ: TypeEnum, valid: valid, check: func(name, v string) (string, error) {
		switch t := strings.TrimSpace(v); t {
		case "", LeaderSelector, RackAwareReplicaSelector:
			return t, nil
		}
		return "", invalid(name, v, valid, "Cairn implements only "+RackAwareReplicaSelector+" (consumers read from a replica in their rack) and "+LeaderSelector+" (from the leader)")
	}}
}

// enumSpec accepts one of values, case-insensitively, and returns it as spelled there.
func enumSpec(values ...string) spec {
	valid := strings.Join(values, ", ")
	return spec{typ: TypeEnum, valid: valid, check: func(name, v string) (string, error) {
		t := strings.TrimSpace(v)
		for _, e := range values {
			if strings.EqualFold(t, e) {
				return e, nil
			}
		}
		return "", invalid(name, v, valid, "not one of the allowed values")
	}}
}

// splitList splits a comma-separated list and trims each item. An empty (or all-blank)
// string is the empty list; an empty item inside a list is an error.
func splitList(v string) ([]string, bool) {
	if strings.TrimSpace(v) == "" {
		return nil, true
	}
	items := strings.Split(v, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
		if items[i] == "" {
			return nil, false
		}
	}
	return items, true
}

// cleanupPolicySpec accepts delete, compact or both, in any order and case, and returns
// the canonical "delete", "compact" or "compact,delete".
func cleanupPolicySpec() spec {
	const valid = "delete, compact, compact,delete"
	return spec{typ: TypeList, valid: valid, check: func(name, v string) (string, error) {
		items, ok := splitList(v)
		if !ok {
			return "", invalid(name, v, valid, "empty item in list")
		}
		if len(items) == 0 {
			return "", invalid(name, v, valid, "at least one policy is required")
		}
		var compact, del bool
		for _, it := range items {
			switch strings.ToLower(it) {
			case "delete":
				del = true
			case "compact":
				compact = true
			default:
				return "", invalid(name, v, valid, fmt.Sprintf("unknown cleanup policy %q", it))
			}
		}
		switch {
		case compact && del:
			return "compact,delete", nil
		case compact:
			return "compact", nil
		}
		return "delete", nil
	}}
}

// compressionSpec accepts only "producer": batches are stored and served as produced.
func compressionSpec() spec {
	const valid = "producer"
	return spec{typ: TypeEnum, valid: valid, check: func(name, v string) (string, error) {
		t := strings.ToLower(strings.TrimSpace(v))
		switch t {
		case "producer":
			return "producer", nil
		case "uncompressed", "none", "gzip", "snappy", "lz4", "zstd":
			return "", refusedValue(name, t, "Cairn keeps every batch in the codec the producer chose and never converts it to another, so only \"producer\" is accepted")
		}
		return "", invalid(name, v, valid, "unknown compression type")
	}}
}

// timestampTypeSpec accepts only CreateTime: records keep the timestamps their producers
// gave them. LogAppendTime would need the broker to rewrite batches, which it does not do.
func timestampTypeSpec() spec {
	const valid = "CreateTime"
	return spec{typ: TypeEnum, valid: valid, check: func(name, v string) (string, error) {
		switch strings.TrimSpace(v) {
		case "CreateTime":
			return "CreateTime", nil
		case "LogAppendTime":
			return "", refusedValue(name, "LogAppendTime", "Cairn stores batches as produced and does not rewrite their timestamps, so only CreateTime is accepted")
		}
		return "", invalid(name, v, valid, "unknown timestamp type")
	}}
}

func hasControlOrSpace(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return true
		}
	}
	return false
}

// checkAddr checks host:port. A listen address may leave the host empty and use port 0;
// an address others dial (advertised, seed) needs a concrete host and a port from 1.
func checkAddr(v string, dial bool) string {
	if hasControlOrSpace(v) {
		return "contains spaces or control characters"
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "not a host:port address"
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "port is not a number from 0 to 65535"
	}
	if dial {
		if host == "" {
			return "host is empty"
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			return "host is a wildcard address that no one can dial"
		}
		if p == 0 {
			return "port 0 cannot be dialled"
		}
	}
	return ""
}

func listenAddrSpec() spec {
	const valid = "host:port (host may be empty to listen on all interfaces)"
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		if p := checkAddr(v, false); p != "" {
			return "", invalid(name, v, valid, p)
		}
		return v, nil
	}}
}

// advertisedAddrSpec is an address others dial; empty stands for the value of defaultFrom.
func advertisedAddrSpec(defaultFrom string) spec {
	valid := "host:port with a dialable host and a port from 1 to 65535, or empty for " + defaultFrom
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		if v == "" {
			return "", nil
		}
		if p := checkAddr(v, true); p != "" {
			return "", invalid(name, v, valid, p)
		}
		return v, nil
	}}
}

func seedsSpec() spec {
	const valid = "comma-separated host:port list (dialable hosts, ports 1 to 65535), or empty"
	return spec{typ: TypeList, valid: valid, check: func(name, v string) (string, error) {
		items, ok := splitList(v)
		if !ok {
			return "", invalid(name, v, valid, "empty item in list")
		}
		for _, it := range items {
			if p := checkAddr(it, true); p != "" {
				return "", invalid(name, v, valid, fmt.Sprintf("seed %q: %s", it, p))
			}
		}
		return strings.Join(items, ","), nil
	}}
}

func dataDirSpec() spec {
	const valid = "a non-empty path"
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		if v == "" {
			return "", invalid(name, v, valid, "empty")
		}
		if strings.ContainsFunc(v, unicode.IsControl) {
			return "", invalid(name, v, valid, "contains control characters")
		}
		return v, nil
	}}
}

func rackSpec() spec {
	const valid = "empty, or up to 255 bytes without spaces or control characters"
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		if len(v) > 255 {
			return "", invalid(name, v, valid, "longer than 255 bytes")
		}
		if hasControlOrSpace(v) {
			return "", invalid(name, v, valid, "contains spaces or control characters")
		}
		return v, nil
	}}
}

// saslMechanisms are the SASL mechanisms the Kafka layer serves (internal/security's
// exchanges), spelled as clients send them.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// saslMechanismsSpec accepts a non-empty list of served SASL mechanisms. Names are matched
// exactly, as Kafka matches them in SaslHandshake; GSSAPI and OAUTHBEARER are refused with
// a reason rather than accepted and never offered.
func saslMechanismsSpec() spec {
	valid := "a comma-separated, non-empty list of " + strings.Join(saslMechanisms, ", ")
	return spec{typ: TypeList, valid: valid, check: func(name, v string) (string, error) {
		items, ok := splitList(v)
		if !ok {
			return "", invalid(name, v, valid, "empty item in list")
		}
		if len(items) == 0 {
			return "", invalid(name, v, valid, "no mechanism: a SASL listener could authenticate no one")
		}
		seen := map[string]bool{}
		var out []string
		for _, it := range items {
			known := false
			for _, m := range saslMechanisms {
				known = known || it == m
			}
			switch {
			case it == "GSSAPI" || it == "OAUTHBEARER":
				return "", invalid(name, v, valid, it+" is not served: Cairn authenticates SASL clients with PLAIN or SCRAM only")
			case !known:
				return "", invalid(name, v, valid, fmt.Sprintf("unknown mechanism %q (names are case-sensitive)", it))
			}
			if !seen[it] {
				seen[it] = true
				out = append(out, it)
			}
		}
		return strings.Join(out, ","), nil
	}}
}

// authorizerSpec accepts "" (authorization off) or one of Kafka's authorizer class names.
func authorizerSpec() spec {
	valid := `"" (off), ` + AclAuthorizer + ", " + StandardAuthorizer
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		switch t := strings.TrimSpace(v); t {
		case "", AclAuthorizer, StandardAuthorizer:
			return t, nil
		}
		return "", invalid(name, v, valid, "Cairn has one built-in ACL authorizer, turned on by either of Kafka's class names; it cannot load other classes")
	}}
}

// superUsersSpec accepts Kafka's super.users: principals "Type:name" separated by ";".
// It returns them trimmed, empty items dropped.
func superUsersSpec() spec {
	const valid = `principals separated by ";", each Type:name (User:alice;User:admin)`
	return spec{typ: TypeString, valid: valid, check: func(name, v string) (string, error) {
		var out []string
		for _, p := range strings.Split(v, ";") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			typ, user, ok := strings.Cut(p, ":")
			if !ok || typ == "" || user == "" {
				return "", invalid(name, v, valid, fmt.Sprintf("%q is not of the form Type:name", p))
			}
			out = append(out, p)
		}
		return strings.Join(out, ";"), nil
	}}
}

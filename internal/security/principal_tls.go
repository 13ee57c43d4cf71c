package security

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper turns a client certificate's subject into a principal, by Kafka's
// ssl.principal.mapping.rules: a comma- or newline-separated list of rules, each
// RULE:pattern/replacement/ with an optional L (lower case) or U (upper case) after it, or
// DEFAULT. The subject is the distinguished name in RFC 2253 form ("CN=alice,OU=eng,O=Acme");
// the first rule whose pattern matches the whole of it gives the name ($1, $2... are the
// pattern's groups), and DEFAULT gives the distinguished name unchanged. A subject that no
// rule matches is refused, as Kafka refuses it, rather than let in under a name no ACL
// was written for.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	def         bool // DEFAULT
	pattern     *regexp.Regexp
	replacement string
	caseFold    byte // 0, 'L' or 'U'
}

// maxMappingRules bounds the rules one property may hold: each is a regexp tried on every
// mTLS handshake.
const maxMappingRules = 100

// ParsePrincipalMappingRules parses rules; "" is DEFAULT alone.
func ParsePrincipalMappingRules(rules string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	rest := strings.TrimSpace(rules)
	if rest == "" {
		m.rules = []mappingRule{{def: true}}
		return m, nil
	}
	for rest != "" {
		if len(m.rules) == maxMappingRules {
			return nil, fmt.Errorf("more than %d principal mapping rules", maxMappingRules)
		}
		var r mappingRule
		var err error
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.def = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			r, rest, err = parseRule(rest[len("RULE:"):])
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("principal mapping rule %q: want RULE:pattern/replacement/[LU] or DEFAULT", firstItem(rest))
		}
		rest = strings.TrimLeft(rest, " \t")
		switch {
		case rest == "":
		case rest[0] == ',' || rest[0] == '\n':
			rest = strings.TrimSpace(rest[1:])
			if rest == "" {
				return nil, errors.New("principal mapping rules end with an empty rule after a separator")
			}
		default:
			return nil, fmt.Errorf("principal mapping rules: unexpected %q after a rule; rules are separated by commas", firstItem(rest))
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// parseRule parses "pattern/replacement/[LU]" and returns what follows it.
func parseRule(s string) (mappingRule, string, error) {
	pattern, s, ok := cutUnescaped(s)
	if !ok {
		return mappingRule{}, "", errors.New("principal mapping rule: RULE: needs pattern/replacement/ with both slashes")
	}
	replacement, s, ok := cutUnescaped(s)
	if !ok {
		return mappingRule{}, "", fmt.Errorf("principal mapping rule with pattern %q: the replacement has no closing slash", pattern)
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return mappingRule{}, "", fmt.Errorf("principal mapping rule pattern %q: %v", pattern, err)
	}
	r := mappingRule{pattern: re, replacement: replacement}
	if s != "" && (s[0] == 'L' || s[0] == 'U') {
		r.caseFold, s = s[0], s[1:]
	}
	return r, s, nil
}

// cutUnescaped splits s at its first slash not preceded by a backslash, and unescapes "\/"
// in the part before it.
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == '/' {
				i++
			}
		case '/':
			return strings.ReplaceAll(s[:i], `\/`, "/"), s[i+1:], true
		}
	}
	return "", "", false
}

func firstItem(s string) string {
	if i := strings.IndexAny(s, ",\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return s
}

// Name maps a distinguished name to a principal name, or says that no rule applies.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	if dn == "" {
		return "", errors.New("the client certificate has an empty subject, which names no principal")
	}
	for _, r := range m.rules {
		if r.def {
			return dn, nil
		}
		match := r.pattern.FindStringSubmatchIndex(dn)
		if match == nil {
			continue
		}
		name := string(r.pattern.ExpandString(nil, r.replacement, dn, match))
		switch r.caseFold {
		case 'L':
			name = strings.ToLower(name)
		case 'U':
			name = strings.ToUpper(name)
		}
		if name == "" {
			return "", fmt.Errorf("principal mapping rule %s maps certificate subject %q to an empty name", r.pattern, dn)
		}
		return name, nil
	}
	return "", fmt.Errorf("no principal mapping rule applies to certificate subject %q", dn)
}

// Principal is the principal of a verified client certificate: User:<mapped subject>.
func (m *PrincipalMapper) Principal(cert *x509.Certificate) (Principal, error) {
	name, err := m.Name(cert.Subject.String())
	if err != nil {
		return "", err
	}
	return UserPrincipal(name), nil
}

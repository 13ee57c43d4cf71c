package config

import (
	"fmt"
	"strings"
)

// ValidateTopic checks a topic property and returns the value's canonical form. An unknown
// name, a refused Kafka property, a property of another scope or a bad value gives an *Error.
func ValidateTopic(name, value string) (string, error) { return validate(ScopeTopic, name, value) }

// ValidateCluster checks a cluster property (set on a broker resource) and returns the
// value's canonical form. Node properties are read-only at run time and give an *Error, as
// do unknown names, refused Kafka properties, topic-only properties and bad values.
func ValidateCluster(name, value string) (string, error) {
	return validate(ScopeCluster, name, value)
}

// ValidateNode checks a node property as `cairn start` reads it (flag, YAML or environment)
// and returns the value's canonical form, or an *Error.
func ValidateNode(name, value string) (string, error) { return validate(ScopeNode, name, value) }

func validate(scope Scope, name, value string) (string, error) {
	if p := lookup(scope, name); p != nil {
		return p.Validate(value)
	}
	return "", nameError(scope, name)
}

// Validator returns the Validate function of a scope, handy for ApplyIncremental.
func Validator(scope Scope) func(name, value string) (string, error) {
	return func(name, value string) (string, error) { return validate(scope, name, value) }
}

func lookup(scope Scope, name string) *Property {
	if scope < ScopeNode || scope > ScopeTopic {
		return nil
	}
	if i, ok := reg.byScope[scope][name]; ok {
		return &reg.props[i]
	}
	return nil
}

// lookupAny finds name in any scope, preferring topic, then cluster, then node. Properties
// that share a name across scopes share their type and rules.
func lookupAny(name string) *Property {
	for _, s := range []Scope{ScopeTopic, ScopeCluster, ScopeNode} {
		if p := lookup(s, name); p != nil {
			return p
		}
	}
	return nil
}

// Lookup returns the property called name in scope.
func Lookup(scope Scope, name string) (Property, bool) {
	if p := lookup(scope, name); p != nil {
		return *p, true
	}
	return Property{}, false
}

// IsTopicProperty reports whether name is an accepted topic property.
func IsTopicProperty(name string) bool { return lookup(ScopeTopic, name) != nil }

// IsClusterProperty reports whether name is an accepted cluster property.
func IsClusterProperty(name string) bool { return lookup(ScopeCluster, name) != nil }

// IsNodeProperty reports whether name is a node property.
func IsNodeProperty(name string) bool { return lookup(ScopeNode, name) != nil }

// All returns every property: topic ones, then cluster, then node, each sorted by name.
func All() []Property { return slicesClone(reg.props) }

// Properties returns the properties of one scope, sorted by name.
func Properties(scope Scope) []Property {
	var out []Property
	for _, p := range reg.props {
		if p.Scope == scope {
			out = append(out, p)
		}
	}
	return out
}

func names(scope Scope) []string {
	var out []string
	for _, p := range reg.props {
		if p.Scope == scope {
			out = append(out, p.Name)
		}
	}
	return out
}

// TopicPropertyNames returns the accepted topic property names, sorted.
func TopicPropertyNames() []string { return names(ScopeTopic) }

// ClusterPropertyNames returns the accepted cluster property names, sorted.
func ClusterPropertyNames() []string { return names(ScopeCluster) }

// NodePropertyNames returns the node property names, sorted.
func NodePropertyNames() []string { return names(ScopeNode) }

// RefusedProperties returns the well-known Kafka properties that Cairn refuses, with reasons.
func RefusedProperties() []Refused { return slicesClone(reg.refused) }

// RefusedValues returns the values of accepted properties that Cairn refuses, with reasons.
func RefusedValues() []RefusedValue { return refusedValues() }

// LookupRefused reports whether name is a refused Kafka property, and which entry refuses it.
func LookupRefused(name string) (Refused, bool) {
	for _, r := range reg.refused {
		if r.Name == name {
			return r, true
		}
	}
	if lookupAny(name) != nil {
		return Refused{}, false // an accepted property under a refused prefix (log.cleaner.delete.retention.ms)
	}
	for _, r := range reg.refused {
		if r.matches(name) {
			return r, true
		}
	}
	return Refused{}, false
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

// shown quotes a user-supplied name or value for an error message, cutting it if long.
func shown(s string) string {
	const max = 128
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// nameError explains why name is not a property of scope.
func nameError(scope Scope, name string) *Error {
	if name == "" {
		return &Error{Msg: "property name is empty"}
	}
	if r, ok := LookupRefused(name); ok {
		return &Error{Msg: r.Message(name)}
	}
	if n := lookup(ScopeNode, name); n != nil {
		return &Error{Msg: fmt.Sprintf("%s is a node property; set it with cairn start %s", name, n.Flag)}
	}
	switch scope {
	case ScopeTopic:
		if lookup(ScopeCluster, name) != nil {
			msg := name + " is a cluster property, not a topic property"
			for _, p := range reg.props {
				if p.Scope == ScopeTopic && p.Synonym == name {
					msg += "; on a topic, set " + p.Name
				}
			}
			return &Error{Msg: msg}
		}
	case ScopeCluster:
		if p := lookup(ScopeTopic, name); p != nil {
			return &Error{Msg: fmt.Sprintf("%s is a topic property; its cluster-wide default is %s", name, p.Synonym)}
		}
	case ScopeNode:
		if lookup(ScopeCluster, name) != nil || lookup(ScopeTopic, name) != nil {
			return &Error{Msg: name + " is not a node property; it is set at run time with AlterConfigs or IncrementalAlterConfigs"}
		}
	}
	msg := fmt.Sprintf("unknown %s property %s", scope, shown(name))
	if s := suggest(scope, name); s != "" {
		msg += " (did you mean " + s + "?)"
	}
	return &Error{Msg: msg}
}

// suggest finds a property of scope whose name matches name once case and the separators
// '.', '_' and '-' are ignored.
func suggest(scope Scope, name string) string {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case '.', '_', '-':
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	n := norm(name)
	for _, p := range reg.props {
		if p.Scope == scope && norm(p.Name) == n {
			return p.Name
		}
	}
	return ""
}

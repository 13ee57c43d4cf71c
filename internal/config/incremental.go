package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kafka IncrementalAlterConfigs operations.
const (
	OpSet      int8 = 0
	OpDelete   int8 = 1
	OpAppend   int8 = 2
	OpSubtract int8 = 3
)

// Op is one IncrementalAlterConfigs operation on one property.
type Op struct {
	Name  string
	Op    int8 // OpSet, OpDelete, OpAppend or OpSubtract
	Value *string
}

func opName(op int8) string {
	switch op {
	case OpSet:
		return "SET"
	case OpDelete:
		return "DELETE"
	case OpAppend:
		return "APPEND"
	case OpSubtract:
		return "SUBTRACT"
	}
	return fmt.Sprintf("operation %d", op)
}

// ApplyIncremental applies IncrementalAlterConfigs operations to a map of overrides and
// returns the new map; current is not modified. validate is ValidateTopic or
// ValidateCluster (or Validator(scope)); every value stored is its canonical result.
//
//   - SET stores the validated value; a nil value is an error.
//   - DELETE removes the override, so the value reverts to its default. The name must be
//     one validate accepts, unless it is present in current (a stale entry can be removed).
//   - APPEND and SUBTRACT add or remove comma-separated items of a list property; on a
//     property without an override they start from the built-in default. They are an
//     error for any other type.
//
// It is all or nothing: on the first error it returns nil and the error. Naming one
// property in two operations is an error, as in Kafka.
func ApplyIncremental(current map[string]string, ops []Op, validate func(name, value string) (string, error)) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return nil, &Error{Msg: fmt.Sprintf("property %s appears in more than one operation", shown(op.Name))}
		}
		seen[op.Name] = true
		p := lookupAny(op.Name)
		switch op.Op {
		case OpSet:
			if op.Value == nil {
				return nil, &Error{Msg: fmt.Sprintf("SET of %s has no value", shown(op.Name))}
			}
			v, err := validate(op.Name, *op.Value)
			if err != nil {
				return nil, err
			}
			out[op.Name] = v
		case OpDelete:
			if _, ok := current[op.Name]; !ok {
				// Check that the name is settable here, so a typo is not a silent no-op.
				// Every default is a valid value, so validate fails only on the name.
				probe := ""
				if p != nil {
					probe = p.Default
				}
				if _, err := validate(op.Name, probe); err != nil {
					return nil, err
				}
			}
			delete(out, op.Name)
		case OpAppend, OpSubtract:
			if p == nil {
				_, err := validate(op.Name, "")
				if err == nil {
					err = &Error{Msg: fmt.Sprintf("unknown property %s", shown(op.Name))}
				}
				return nil, err
			}
			if p.Type != TypeList {
				return nil, &Error{Msg: fmt.Sprintf("%s is only valid for list properties; %s is %s %s", opName(op.Op), op.Name, article(p.Type.String()), p.Type)}
			}
			if op.Value == nil {
				return nil, &Error{Msg: fmt.Sprintf("%s of %s has no value", opName(op.Op), op.Name)}
			}
			base, ok := out[op.Name]
			if !ok {
				base = p.Default
			}
			list, ok1 := splitList(base)
			items, ok2 := splitList(*op.Value)
			if !ok1 || !ok2 {
				return nil, &Error{Msg: fmt.Sprintf("%s of %s: empty item in list %s", opName(op.Op), op.Name, shown(*op.Value))}
			}
			if op.Op == OpAppend {
				for _, it := range items {
					if !slices.Contains(list, it) {
						list = append(list, it)
					}
				}
			} else {
				list = slices.DeleteFunc(list, func(s string) bool { return slices.Contains(items, s) })
			}
			v, err := validate(op.Name, strings.Join(list, ","))
			if err != nil {
				return nil, err
			}
			out[op.Name] = v
		default:
			return nil, &Error{Msg: fmt.Sprintf("unknown IncrementalAlterConfigs operation %d for %s", op.Op, shown(op.Name))}
		}
	}
	return out, nil
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

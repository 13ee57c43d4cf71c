package config

import (
	"errors"
	"testing"
)

func FuzzValidate(f *testing.F) {
	for name, cases := range validationCases {
		for _, c := range cases {
			f.Add(name, c.in)
		}
	}
	for _, r := range RefusedProperties() {
		f.Add(r.Name, "1")
	}
	f.Add("", "")
	f.Add("log.cleaner.x", "\xff")
	f.Fuzz(func(t *testing.T, name, value string) {
		for _, scope := range []Scope{ScopeTopic, ScopeCluster, ScopeNode} {
			c, err := validate(scope, name, value)
			if err != nil {
				var ce *Error
				if !errors.As(err, &ce) || ce.Msg == "" {
					t.Fatalf("%s %q=%q: error %T %v is not a non-empty *Error", scope, name, value, err, err)
				}
				continue
			}
			// Canonical values are fixed points.
			if c2, err := validate(scope, name, c); err != nil || c2 != c {
				t.Fatalf("%s %q: canonical %q of %q re-validates to %q, %v", scope, name, c, value, c2, err)
			}
		}
		// Resolution and description never panic on anything callers hand in.
		m := map[string]string{name: value}
		ResolveTopic(m, m)
		ResolveCluster(m)
		DescribeTopic(m, m)
		DescribeBroker(m, m)
		v := value
		ApplyIncremental(m, []Op{{Name: name, Op: OpAppend, Value: &v}}, ValidateTopic)
		ApplyIncremental(m, []Op{{Name: name, Op: OpSubtract, Value: &v}}, ValidateCluster)
		ApplyIncremental(nil, []Op{{Name: name, Op: OpDelete}}, ValidateNode)
	})
}

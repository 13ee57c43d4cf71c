package main

import (
	"errors"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestParseBrokers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"localhost:9092", []string{"localhost:9092"}},
		{"a:1,b:2", []string{"a:1", "b:2"}},
		{" a:1 , ,b:2, ", []string{"a:1", "b:2"}},
	} {
		got, err := parseBrokers(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseBrokers(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", " , ,"} {
		if _, err := parseBrokers(in); err == nil {
			t.Errorf("parseBrokers(%q): want an error", in)
		}
	}
}

// seedsFor parses args into a command carrying client flags and returns the
// seeds it would dial.
func seedsFor(t *testing.T, args ...string) []string {
	t.Helper()
	var f clientFlags
	var got []string
	cmd := &cobra.Command{
		Use: "x",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			got, err = f.seeds(cmd)
			return err
		},
	}
	f.register(cmd, false)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestBrokersPrecedence(t *testing.T) {
	t.Setenv(brokersEnv, "")
	if got := seedsFor(t); !reflect.DeepEqual(got, []string{"localhost:9092"}) {
		t.Errorf("default: got %v", got)
	}
	t.Setenv(brokersEnv, "env1:9092,env2:9092")
	if got := seedsFor(t); !reflect.DeepEqual(got, []string{"env1:9092", "env2:9092"}) {
		t.Errorf("env: got %v", got)
	}
	if got := seedsFor(t, "-b", "flag:1"); !reflect.DeepEqual(got, []string{"flag:1"}) {
		t.Errorf("flag beats env: got %v", got)
	}
	if got := seedsFor(t, "--brokers=flag:1,flag:2"); !reflect.DeepEqual(got, []string{"flag:1", "flag:2"}) {
		t.Errorf("long flag: got %v", got)
	}
}

func TestParseConfigs(t *testing.T) {
	got, err := parseConfigs([]string{"retention.ms=1000", "cleanup.policy=compact,delete", "x=", "y=a=b"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact,delete", "x": "", "y": "a=b"}
	if len(got) != len(want) {
		t.Fatalf("got %d configs, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] == nil || *got[k] != v {
			t.Errorf("config %s = %v, want %q", k, got[k], v)
		}
	}
	for _, bad := range [][]string{{"novalue"}, {"=v"}, {" =v"}, {"a=1", "a=2"}} {
		if _, err := parseConfigs(bad); err == nil {
			t.Errorf("parseConfigs(%q): want an error", bad)
		}
	}
	if got, err := parseConfigs(nil); err != nil || got != nil {
		t.Errorf("parseConfigs(nil) = %v, %v", got, err)
	}
}

func TestBrokerError(t *testing.T) {
	if brokerError(nil, "x") != nil {
		t.Fatal("nil error must stay nil")
	}
	err := brokerError(kerr.InvalidConfig, "unknown config foo")
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("wrapped error lost its kerr identity: %v", err)
	}
	if want := "INVALID_CONFIG: Configuration is invalid. (broker says: unknown config foo)"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if got := brokerError(kerr.InvalidConfig, ""); got != kerr.InvalidConfig {
		t.Errorf("no message: got %v", got)
	}
}

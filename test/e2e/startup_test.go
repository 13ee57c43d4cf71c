package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/test/harness"
)

// brokerIdentity returns the node id, host:port and rack the broker advertises in Metadata.
func brokerIdentity(t *testing.T, b *Broker) (int32, string, string) {
	t.Helper()
	brokers, err := b.Admin(t).ListBrokers(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatalf("ListBrokers: %v", err)
	}
	if len(brokers) != 1 {
		t.Fatalf("Metadata lists %d brokers, want 1: %+v", len(brokers), brokers)
	}
	rack := ""
	if brokers[0].Rack != nil {
		rack = *brokers[0].Rack
	}
	return brokers[0].NodeID, brokers[0].Host + ":" + strconv.Itoa(int(brokers[0].Port)), rack
}

// TestStartConfigSources: `cairn start` takes its settings from flags, CAIRN_* environment
// variables and a YAML --config file, flags first, then environment, then file; Metadata
// shows the resulting node id, advertised address and rack.
func TestStartConfigSources(t *testing.T) {
	t.Parallel()
	t.Run("env", func(t *testing.T) {
		b := startBroker(t, BrokerOpts{OmitNodeID: true, Env: []string{"CAIRN_NODE_ID=3", "CAIRN_RACK=rack-env"}})
		id, _, rack := brokerIdentity(t, b)
		if id != 3 || rack != "rack-env" {
			t.Errorf("CAIRN_NODE_ID=3 CAIRN_RACK=rack-env: Metadata says node %d rack %q", id, rack)
		}
	})
	t.Run("config-file", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "cairn.yaml")
		if err := os.WriteFile(cfg, []byte("node-id: 5\nrack: rack-file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		b := startBroker(t, BrokerOpts{OmitNodeID: true, Args: []string{"--config", cfg}})
		id, _, rack := brokerIdentity(t, b)
		if id != 5 || rack != "rack-file" {
			t.Errorf("--config with node-id 5, rack rack-file: Metadata says node %d rack %q", id, rack)
		}
	})
	t.Run("precedence", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "cairn.yaml")
		if err := os.WriteFile(cfg, []byte("node-id: 5\nrack: rack-file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		b := startBroker(t, BrokerOpts{NodeID: 7, Args: []string{"--config", cfg}, Env: []string{"CAIRN_NODE_ID=3", "CAIRN_RACK=rack-env"}})
		id, _, rack := brokerIdentity(t, b)
		if id != 7 || rack != "rack-env" {
			t.Errorf("flag node 7, env node 3 rack rack-env, file node 5 rack rack-file: Metadata says node %d rack %q; want 7, rack-env", id, rack)
		}
	})
	t.Run("replica-lag", func(t *testing.T) {
		b := startBroker(t, BrokerOpts{Args: []string{"--replica-lag-time-max-ms", "2000"}})
		describe := func() {
			t.Helper()
			rcs, err := b.Admin(t).DescribeBrokerConfigs(ctxFor(t, 10*time.Second), 1)
			if err != nil || len(rcs) != 1 {
				t.Fatalf("DescribeConfigs broker 1: %v %+v", err, rcs)
			}
			for _, c := range rcs[0].Configs {
				if c.Key == "replica.lag.time.max.ms" {
					if c.MaybeValue() != "2000" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
						t.Errorf("replica.lag.time.max.ms = %q (%v), want 2000 STATIC_BROKER_CONFIG", c.MaybeValue(), c.Source)
					}
					return
				}
			}
			t.Errorf("DescribeConfigs broker 1 has no replica.lag.time.max.ms")
		}
		describe()
		// Fixed at start, as in Kafka: changing it at run time is refused, saying how to set it.
		rs, err := b.Admin(t).AlterBrokerConfigs(ctxFor(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "replica.lag.time.max.ms", Value: kadm.StringPtr("5000")}})
		if err != nil {
			t.Fatal(err)
		}
		wantRefused(t, "IncrementalAlterConfigs replica.lag.time.max.ms", rs[0].Err, rs[0].ErrMessage, "--replica-lag-time-max-ms")
		describe()
	})
	t.Run("advertised-addr", func(t *testing.T) {
		port := freeAddr(t)[len("127.0.0.1:"):]
		adv := "localhost:" + port
		b := startBroker(t, BrokerOpts{Args: []string{"--advertised-kafka-addr", adv}})
		_, addr, _ := brokerIdentity(t, b)
		if addr != adv {
			t.Errorf("--advertised-kafka-addr %s: Metadata advertises %s", adv, addr)
		}
	})
}

// TestStartRefusals: `cairn start` with a bad setting exits non-zero and says why; a second
// broker on a data directory in use refuses to start instead of sharing it.
func TestStartRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"bad-node-id", []string{"--node-id", "abc"}, "node"},
		{"node-id-zero", []string{"--node-id", "0"}, "node.id"},
		{"unknown-config-key", nil, "no-such-key"},
		{"replica-lag-below-floor", []string{"--node-id", "1", "--replica-lag-time-max-ms", "500"},
			`invalid value "500" for replica.lag.time.max.ms: out of range; valid values: 1000 to 86400000`},
		{"replica-lag-not-a-number", []string{"--node-id", "1", "--replica-lag-time-max-ms", "2s"},
			`invalid value "2s" for replica.lag.time.max.ms: not a whole number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"start", "--data-dir", t.TempDir(), "--kafka-addr", freeAddr(t), "--admin-addr", freeAddr(t), "--rpc-addr", freeAddr(t)}, c.args...)
			if c.name == "unknown-config-key" {
				cfg := filepath.Join(t.TempDir(), "bad.yaml")
				os.WriteFile(cfg, []byte("no-such-key: 1\n"), 0o644)
				args = append(args, "--node-id", "1", "--config", cfg)
			}
			r := run(t, 20*time.Second, "", cairnBin, args...)
			if r.Err == nil || strings.Contains(r.Err.Error(), "did not finish") {
				t.Fatalf("cairn %s: want a prompt non-zero exit: %s", strings.Join(args, " "), r)
			}
			if !strings.Contains(r.Stderr, c.want) {
				t.Errorf("cairn %s: stderr does not mention %q:\n%s", strings.Join(args, " "), c.want, r.Stderr)
			}
		})
	}
	t.Run("data-dir-in-use", func(t *testing.T) {
		a := startBroker(t, BrokerOpts{})
		createTopic(t, a.Admin(t), "owned", 1, nil)
		produceSync(t, a.Client(t, kgo.DefaultProduceTopic("owned")), "owned", "a", 10)
		adminAddr := freeAddr(t)
		cmd := exec.Command(cairnBin, "start", "--node-id", "1", "--data-dir", a.DataDir,
			"--kafka-addr", freeAddr(t), "--admin-addr", adminAddr, "--rpc-addr", freeAddr(t))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		harness.DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// It must exit non-zero; it must not become ready.
		deadline := time.After(15 * time.Second)
		hc := &http.Client{Timeout: time.Second}
	wait:
		for {
			select {
			case err := <-exited:
				if err == nil {
					t.Errorf("a second broker on the data directory of a running broker exited 0 instead of refusing")
				}
				break wait
			case <-deadline:
				cmd.Process.Kill()
				<-exited
				t.Errorf("a second broker on the data directory of a running broker neither exited nor became ready within 15s")
				break wait
			case <-time.After(50 * time.Millisecond):
				if resp, err := hc.Get("http://" + adminAddr + "/v1/status/ready"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						cmd.Process.Signal(syscall.SIGTERM)
						<-exited
						t.Errorf("a second broker started and reported ready on the data directory of a running broker (%s); want a refusal (data directory lock).\nits stderr:\n%s",
							a.DataDir, tailString(stderr.String(), 5))
						break wait
					}
				}
			}
		}
		// The first broker is unharmed.
		if e := endOffsets(t, a.Admin(t), "owned")[0]; e != 10 {
			t.Errorf("first broker: end offset %d, want 10", e)
		}
	})
}

func tailString(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

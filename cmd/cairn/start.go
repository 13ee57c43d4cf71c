package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/cairn-io/cairn/internal/admin"
	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/console"
	"github.com/cairn-io/cairn/internal/kafka"
	"github.com/cairn-io/cairn/internal/lab"
	"github.com/cairn-io/cairn/internal/security"
	"github.com/cairn-io/cairn/internal/storage"
	"github.com/cairn-io/cairn/internal/tlsconf"
)

// startFlags maps each `cairn start` flag to its node property in the registry. The same
// value may come from the flag, from CAIRN_<FLAG> in the environment, or from the YAML file
// given by --config (keyed by flag name), in that order of precedence.
var startFlags = []struct{ flag, property, usage string }{
	{"node-id", config.NodeID, "this broker's id, unique in the cluster"},
	{"data-dir", config.NodeDataDir, "folder for the broker's data"},
	{"kafka-addr", config.NodeKafkaAddr, "address the Kafka listener binds"},
	{"advertised-kafka-addr", config.NodeAdvertisedKafkaAddr, "address clients are told to connect to (default: --kafka-addr)"},
	{"rpc-addr", config.NodeRPCAddr, "inter-broker RPC address (Raft and produce forwarding)"},
	{"advertised-rpc-addr", config.NodeAdvertisedRPCAddr, "address other brokers are told to dial for RPC (default: --rpc-addr)"},
	{"admin-addr", config.NodeAdminAddr, "admin HTTP address: readiness, metrics, pprof"},
	{"admin-console", config.NodeAdminConsole, "serve the web console under /console on the admin port (true or false)"},
	{"rack", config.NodeRack, "rack this broker runs in"},
	{"seeds", config.NodeSeeds, "comma-separated RPC addresses of the founding brokers, or of a running cluster to join"},
	{"produce-forwarding", config.NodeProduceForwarding, "forward produce requests for partitions this broker does not lead to the leader (true or false)"},
	{"max-incremental-fetch-session-cache-slots", config.NodeFetchSessionSlots, "fetch sessions (KIP-227) this broker keeps; 0 serves none (default 1000)"},
	{"replica-lag-time-max-ms", config.NodeReplicaLagTimeMaxMs, "how long (ms) a follower may lag its leader's log end and stay in the ISR (default 30000)"},
	{"listeners", config.NodeListeners, "Kafka listeners, NAME://host:port,... (instead of --kafka-addr), e.g. PLAINTEXT://:9092,SSL://:9094"},
	{"advertised-listeners", config.NodeAdvertisedListeners, "addresses clients are told per listener, NAME://host:port,... (default: each listener's bind address)"},
	{"listener-security-protocol-map", config.NodeListenerSecurityProtocolMap, "security protocol of each listener name, NAME:PROTOCOL,... (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL map to themselves)"},
	{"ssl-certificate-location", config.NodeSSLCertificateLocation, "PEM certificate (with chain) that SSL listeners present; reloaded when it changes"},
	{"ssl-key-location", config.NodeSSLKeyLocation, "PEM private key of --ssl-certificate-location"},
	{"ssl-truststore-location", config.NodeSSLTruststoreLocation, "PEM CA certificates that client certificates are verified against"},
	{"ssl-client-auth", config.NodeSSLClientAuth, "none, requested or required: whether SSL listeners ask clients for a certificate"},
	{"ssl-principal-mapping-rules", config.NodeSSLPrincipalMappingRules, "Kafka's RULE:pattern/replacement/[LU],...,DEFAULT rules mapping a client certificate's subject to a principal"},
	{"sasl-enabled-mechanisms", config.NodeSASLEnabledMechanisms, "SASL mechanisms SASL listeners offer (default PLAIN,SCRAM-SHA-256,SCRAM-SHA-512)"},
	{"connections-max-reauth-ms", config.NodeConnectionsMaxReauthMs, "SASL session lifetime (ms) after which clients re-authenticate (KIP-368); 0 is unlimited"},
}

// refusedStartKeys are Kafka broker settings a Kafka operator may reach for that Cairn
// refuses (Java keystores): accepted as flags, environment and YAML keys only to be refused
// with the reason, rather than as an unknown flag that says nothing.
var refusedStartKeys = []struct{ flag, property string }{
	{"ssl-keystore-location", "ssl.keystore.location"},
	{"ssl-keystore-password", "ssl.keystore.password"},
	{"ssl-keystore-type", "ssl.keystore.type"},
	{"ssl-key-password", "ssl.key.password"},
	{"ssl-truststore-password", "ssl.truststore.password"},
	{"ssl-truststore-type", "ssl.truststore.type"},
}

// refusedStartKey returns the refusal of a Java keystore setting given by flag, environment
// or YAML, or nil.
func refusedStartKey(fs *pflag.FlagSet, fileKeys map[string]bool) error {
	for _, k := range refusedStartKeys {
		env := "CAIRN_" + strings.ToUpper(strings.ReplaceAll(k.flag, "-", "_"))
		if fs.Changed(k.flag) || os.Getenv(env) != "" || fileKeys[k.flag] {
			r, _ := config.LookupRefused(k.property)
			return fmt.Errorf("--%s (%s): %s", k.flag, k.property, r.Message(k.property))
		}
	}
	return nil
}

func newStartCmd() *cobra.Command {
	var configFile, logLevel string
	var simulatePowerLoss bool
	var testHoldMoves string
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run a broker",
		Long: `Run a Cairn broker. With no flags it serves Kafka on localhost:9092 with data in ./cairn-data.
Each flag may also be set as CAIRN_<FLAG> in the environment (for example CAIRN_NODE_ID) or in the YAML file
named by --config, keyed by flag name (for example "node-id: 1"). Flags win over the environment, which wins over the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			values, err := startValues(cmd.Flags(), configFile)
			if err != nil {
				return err
			}
			node, err := config.ResolveNode(values)
			if err != nil {
				return err
			}
			return runBroker(node, listenerValues(values), logLevel, simulatePowerLoss, testHoldMoves)
		},
	}
	for _, f := range startFlags {
		cmd.Flags().String(f.flag, "", f.usage)
	}
	for _, k := range refusedStartKeys {
		cmd.Flags().String(k.flag, "", "refused: Cairn reads PEM files only")
		_ = cmd.Flags().MarkHidden(k.flag)
	}
	cmd.Flags().StringVar(&configFile, "config", "", "YAML file with start options, keyed by flag name")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	// Not a node property (no environment variable, no YAML key): a switch for fault-injection tests.
	cmd.Flags().BoolVar(&simulatePowerLoss, "simulate-power-loss", false,
		"for fault-injection tests only: keep every byte and directory entry that was not fsynced in memory, so a kill -9 loses what a power cut would")
	// A test gate, hidden from users: the file it names holds partition moves in their joint
	// configuration (internal/broker/moves_gate.go), so an end-to-end test can cancel there.
	cmd.Flags().StringVar(&testHoldMoves, "test-hold-moves", "",
		"for tests only: a file whose content (joint or final) holds every partition move in its joint configuration")
	_ = cmd.Flags().MarkHidden("test-hold-moves")
	return cmd
}

// startValues collects node property values from flags, environment and YAML.
func startValues(fs *pflag.FlagSet, configFile string) (map[string]string, error) {
	fileValues := map[string]string{}
	fileKeys := map[string]bool{}
	if configFile == "" {
		configFile = os.Getenv("CAIRN_CONFIG")
	}
	if configFile != "" {
		raw, err := os.ReadFile(configFile)
		if err != nil {
			return nil, fmt.Errorf("reading --config: %w", err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", configFile, err)
		}
		known := map[string]bool{}
		for _, f := range startFlags {
			known[f.flag] = true
		}
		for k := range doc {
			fileKeys[k] = true
		}
		if err := refusedStartKey(fs, fileKeys); err != nil {
			return nil, err
		}
		for k, v := range doc {
			if !known[k] {
				return nil, fmt.Errorf("%s: unknown key %q (keys are the start flags, e.g. node-id, data-dir)", configFile, k)
			}
			switch t := v.(type) {
			case []any:
				parts := make([]string, len(t))
				for i, x := range t {
					parts[i] = fmt.Sprint(x)
				}
				fileValues[k] = strings.Join(parts, ",")
			case nil:
			default:
				fileValues[k] = fmt.Sprint(t)
			}
		}
	}
	if err := refusedStartKey(fs, fileKeys); err != nil {
		return nil, err
	}
	values := map[string]string{}
	for _, f := range startFlags {
		env := "CAIRN_" + strings.ToUpper(strings.ReplaceAll(f.flag, "-", "_"))
		switch {
		case fs.Changed(f.flag):
			values[f.property], _ = fs.GetString(f.flag)
		case os.Getenv(env) != "":
			values[f.property] = os.Getenv(env)
		case fileValues[f.flag] != "":
			values[f.property] = fileValues[f.flag]
		}
	}
	return values, nil
}

func runBroker(node config.NodeConfig, listenerProps map[string]string, logLevel string, simulatePowerLoss bool, testHoldMoves string) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(lg)

	unlock, err := lockDataDir(node.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	var fs storage.FS // nil: the real filesystem
	var plfs *storage.PowerLossFS
	if simulatePowerLoss {
		lg.Warn("SIMULATED POWER LOSS MODE: unsynced data lives in memory; for tests only",
			"data_dir", node.DataDir, "detail", "what was not fsynced is lost when this process dies; the whole data folder is held in RAM")
		plfs, err = storage.NewPowerLossFS(node.DataDir)
		if err != nil {
			return fmt.Errorf("--simulate-power-loss: %w", err)
		}
		fs = plfs
	}
	if testHoldMoves != "" {
		lg.Warn("TEST GATE: partition moves may be held in their joint configuration; for tests only",
			"test_hold_moves", testHoldMoves)
	}
	rpcTLS, err := rpcTLS(node.RPCTLS)
	if err != nil {
		return err
	}
	listeners, err := kafkaListeners(node)
	if err != nil {
		return err
	}
	var advertised []broker.ListenerAddr
	for _, l := range node.Listeners {
		advertised = append(advertised, broker.ListenerAddr{Name: l.Name, Addr: l.Advertised})
	}
	b, err := broker.New(broker.Config{
		NodeID: node.NodeID, DataDir: node.DataDir, KafkaAddr: node.Listeners[0].Addr, AdvertisedKafkaAddr: node.Listeners[0].Advertised,
		Listeners: advertised, ListenerValues: listenerProps, RPCAddr: node.RPCAddr, AdvertisedRPCAddr: node.AdvertisedRPCAddr, AdminAddr: node.AdminAddr, Rack: node.Rack, Seeds: node.Seeds, Logger: lg,
		DisableForwarding: !node.ProduceForwarding, FS: fs, ReplicaLagMax: time.Duration(node.ReplicaLagTimeMaxMs) * time.Millisecond,
		TestHoldMoves: testHoldMoves, RPCTLS: rpcTLS, OtherNodeValues: securityNodeValues(node),
	})
	if err != nil {
		return err
	}
	metrics := admin.NewMetrics(b)
	adminSrv := admin.NewServer(b, metrics)
	if plfs != nil {
		adminSrv.EnableLabGates(plfs) // fsync holds, for `cairn lab`: never on a real disk
	}
	labCtx, stopLab := context.WithCancel(context.Background())
	defer stopLab()
	if node.AdminConsole {
		var labs console.Lab // the lab runs from the console only beside simulated disks
		if plfs != nil {
			if bin, err := os.Executable(); err == nil {
				labs = lab.NewSessions(labCtx, bin)
			}
		}
		adminSrv.EnableConsole(labs, lg)
	}
	var kafkaLns []net.Listener
	closeLns := func() {
		for _, ln := range kafkaLns {
			ln.Close()
		}
	}
	for _, l := range node.Listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			closeLns()
			b.Close()
			return fmt.Errorf("kafka listener %s: %w", l.Name, err)
		}
		kafkaLns = append(kafkaLns, ln)
	}
	adminLn, err := net.Listen("tcp", node.AdminAddr)
	if err != nil {
		closeLns()
		b.Close()
		return fmt.Errorf("admin listener: %w", err)
	}
	servedAdminLn, adminScheme, err := secureAdmin(adminSrv, b, adminLn, node.Admin, lg)
	if err != nil {
		adminLn.Close()
		closeLns()
		b.Close()
		return err
	}
	ks := kafka.NewServer(b, lg, metrics)
	ks.SetFetchSessionSlots(node.FetchSessionSlots)
	metrics.RegisterFetchSessions(ks.FetchSessionStats)
	if err := ks.SetSASL(kafka.SASLConfig{Mechanisms: node.SASLEnabledMechanisms,
		SessionLifetime: time.Duration(node.ConnectionsMaxReauthMs) * time.Millisecond}); err != nil {
		closeLns()
		adminLn.Close()
		b.Close()
		return err
	}
	metrics.WatchAuthentication(ks)
	ks.SetAuthorizer(b) // off until the cluster property authorizer.class.name is set
	if slices.ContainsFunc(listeners, func(l kafka.Listener) bool { return l.TLS != nil }) {
		metrics.RegisterTLSRefusals(func() admin.TLSRefusals {
			st := ks.TLSStats()
			return admin.TLSRefusals{HandshakeFailures: st.HandshakeFailures, PlaintextClients: st.PlaintextClients, UnmappedPrincipals: st.UnmappedPrincipals}
		})
	}
	httpSrv := &http.Server{Handler: adminSrv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, len(kafkaLns)+1)
	for i, ln := range kafkaLns {
		go func() { errc <- ks.ServeListener(ln, listeners[i]) }()
	}
	go func() {
		if err := httpSrv.Serve(servedAdminLn); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	adminSrv.SetReady(true)
	for i, l := range node.Listeners {
		lg.Info("kafka listener", "name", l.Name, "protocol", l.Protocol, "addr", kafkaLns[i].Addr().String(), "advertised", l.Advertised)
	}
	lg.Info("cairn listening", "kafka", kafkaLns[0].Addr().String(), "advertised", node.Listeners[0].Advertised,
		"admin", adminLn.Addr().String(), "admin_scheme", adminScheme, "rpc_tls", node.RPCTLS.Enabled, "node_id", node.NodeID, "data_dir", node.DataDir)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var runErr error
	select {
	case sig := <-sigs:
		lg.Info("shutting down", "signal", sig.String())
	case runErr = <-errc:
		lg.Error("listener failed", "err", runErr)
	}
	adminSrv.SetReady(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	httpSrv.Shutdown(ctx)
	ks.Close()
	if err := b.Close(); err != nil && runErr == nil {
		runErr = err
	}
	lg.Info("stopped; data flushed and files closed")
	return runErr
}

// lockDataDir takes an exclusive lock on the data folder for the life of the process, so a
// second broker started on the same folder fails at once instead of corrupting the first's
// files. The kernel drops the lock when the process dies, even by kill -9.
func lockDataDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating data folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening data folder lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("data folder %s is in use by another cairn process: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// listenerValues picks the listener and ssl.* properties out of the start values, for
// DescribeConfigs.
func listenerValues(values map[string]string) map[string]string {
	out := map[string]string{}
	for _, name := range []string{config.NodeListeners, config.NodeAdvertisedListeners, config.NodeListenerSecurityProtocolMap,
		config.NodeSSLCertificateLocation, config.NodeSSLKeyLocation, config.NodeSSLTruststoreLocation,
		config.NodeSSLClientAuth, config.NodeSSLPrincipalMappingRules} {
		if v, ok := values[name]; ok {
			out[name] = v
		}
	}
	return out
}

// kafkaListeners turns the node's listeners into what the Kafka server serves, loading the
// TLS material once for all TLS listeners. It fails before anything starts on a SASL
// listener this build cannot serve or on unreadable TLS files.
func kafkaListeners(node config.NodeConfig) ([]kafka.Listener, error) {
	var reloader *tlsconf.Reloader
	mapper, err := security.ParsePrincipalMappingRules(node.TLS.PrincipalMappingRules)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.NodeSSLPrincipalMappingRules, err)
	}
	var out []kafka.Listener
	for _, l := range node.Listeners {
		kl := kafka.Listener{Name: l.Name, SASL: l.SASL()}
		if l.TLS() {
			if reloader == nil {
				reloader, err = tlsconf.New(tlsconf.Files{Cert: node.TLS.CertFile, Key: node.TLS.KeyFile,
					CA: node.TLS.TruststoreFile, ClientAuth: node.TLS.ClientAuth})
				if err != nil {
					return nil, fmt.Errorf("listener %s: %w", l.Name, err)
				}
			}
			kl.TLS, kl.Principals = reloader.ServerConfig(), mapper
		}
		out = append(out, kl)
	}
	return out, nil
}

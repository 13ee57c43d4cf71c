package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// How the client subcommands reach an SSL, SASL_PLAINTEXT or SASL_SSL listener: TLS with
// a CA to verify the broker by and an optional client certificate (mTLS), and SASL with
// PLAIN or SCRAM. The flags follow adminauth.go's conventions: each falls back to its
// environment variable, so that a password need not appear on a command line, where the
// process list and shell history would show it.

const (
	tlsEnv          = "CAIRN_TLS"
	tlsCAEnv        = "CAIRN_TLS_CA"
	tlsCertEnv      = "CAIRN_TLS_CERT"
	tlsKeyEnv       = "CAIRN_TLS_KEY"
	saslMechEnv     = "CAIRN_SASL_MECHANISM"
	saslUserEnv     = "CAIRN_SASL_USER"
	saslPasswordEnv = "CAIRN_SASL_PASSWORD"
)

// clientSecurityFlags are the TLS and SASL flags of clientFlags.
type clientSecurityFlags struct {
	tls                    bool
	tlsCA, tlsCert, tlsKey string
	saslMechanism          string
	saslUser, saslPassword string
}

func (f *clientSecurityFlags) registerSecurity(fs *pflag.FlagSet) {
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS, verifying the brokers by the system's CAs (implied by --tls-ca and --tls-cert); $"+tlsEnv+"=true when not given")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "PEM CA bundle to verify the brokers' certificates by (turns TLS on); $"+tlsCAEnv+" when not given")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM client certificate, for a listener that asks for one (mTLS; turns TLS on); $"+tlsCertEnv+" when not given")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM key of --tls-cert; $"+tlsKeyEnv+" when not given")
	fs.StringVar(&f.saslMechanism, "sasl-mechanism", "", "authenticate with SASL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; $"+saslMechEnv+" when not given")
	fs.StringVar(&f.saslUser, "sasl-user", "", "SASL user name; $"+saslUserEnv+" when not given")
	fs.StringVar(&f.saslPassword, "sasl-password", "", "its password (visible in the process list: prefer $"+saslPasswordEnv+")")
}

// clientSecurity is what the flags and their environment resolve to.
type clientSecurity struct {
	tls  *tls.Config    // nil: plaintext
	sasl sasl.Mechanism // nil: no SASL
}

// enabled reports whether the connection is anything but plaintext without SASL.
func (s clientSecurity) enabled() bool { return s.tls != nil || s.sasl != nil }

func (s clientSecurity) opts() []kgo.Opt {
	var opts []kgo.Opt
	if s.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(s.tls))
	}
	if s.sasl != nil {
		opts = append(opts, kgo.SASL(s.sasl))
	}
	return opts
}

// security resolves and checks the flags: every inconsistency is an error that names
// the flag to fix, found before any connection is tried.
func (f *clientSecurityFlags) security(cmd *cobra.Command) (clientSecurity, error) {
	var out clientSecurity
	useTLS := f.tls
	if fl := cmd.Flags().Lookup("tls"); fl == nil || !fl.Changed {
		switch v := strings.ToLower(strings.TrimSpace(os.Getenv(tlsEnv))); v {
		case "", "0", "false", "no":
		case "1", "true", "yes":
			useTLS = true
		default:
			return out, fmt.Errorf("invalid $%s %q: want true or false", tlsEnv, v)
		}
	}
	ca := flagOrEnv(cmd, "tls-ca", f.tlsCA, tlsCAEnv)
	cert := flagOrEnv(cmd, "tls-cert", f.tlsCert, tlsCertEnv)
	key := flagOrEnv(cmd, "tls-key", f.tlsKey, tlsKeyEnv)
	if (cert == "") != (key == "") {
		return out, fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	if useTLS || ca != "" || cert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return out, fmt.Errorf("--tls-ca: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return out, fmt.Errorf("--tls-ca %s holds no PEM certificate", ca)
			}
		}
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return out, fmt.Errorf("--tls-cert/--tls-key: %w", err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		out.tls = cfg
	}

	mech := strings.TrimSpace(flagOrEnv(cmd, "sasl-mechanism", f.saslMechanism, saslMechEnv))
	user := flagOrEnv(cmd, "sasl-user", f.saslUser, saslUserEnv)
	password := flagOrEnv(cmd, "sasl-password", f.saslPassword, saslPasswordEnv)
	if mech == "" {
		// Only flags are held to this: a user or password in the environment may be
		// there for other commands, against other listeners.
		if cmd.Flags().Changed("sasl-user") || cmd.Flags().Changed("sasl-password") {
			return out, fmt.Errorf("a SASL user or password without a mechanism: give --sasl-mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
		}
		return out, nil
	}
	if user == "" {
		return out, fmt.Errorf("--sasl-mechanism %s needs a user: give --sasl-user (or $%s)", mech, saslUserEnv)
	}
	if password == "" {
		return out, fmt.Errorf("SASL user %s without a password: give $%s (or --sasl-password)", user, saslPasswordEnv)
	}
	// Mechanism names are matched without regard to case here, unlike the broker's
	// sasl.enabled.mechanisms, because what is sent is always the canonical name.
	switch strings.ToUpper(mech) {
	case "PLAIN":
		out.sasl = plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		out.sasl = scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		out.sasl = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	default:
		return out, fmt.Errorf("invalid --sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	return out, nil
}

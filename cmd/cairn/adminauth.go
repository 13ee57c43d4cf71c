package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The admin API's credentials and TLS, for the commands that talk to it: HTTP basic
// authentication with a SCRAM user (admin.auth=basic), a CA to verify an HTTPS admin API
// by, and a client certificate for one that asks for it. Each flag falls back to its
// environment variable, so that a password need not appear on a command line.

const (
	adminUserEnv     = "CAIRN_ADMIN_USER"
	adminPasswordEnv = "CAIRN_ADMIN_PASSWORD"
	adminCAEnv       = "CAIRN_ADMIN_CA"
	adminCertEnv     = "CAIRN_ADMIN_CERT"
	adminKeyEnv      = "CAIRN_ADMIN_KEY"
)

type adminAuthFlags struct {
	user, password, ca, cert, key string
}

func (f *adminAuthFlags) registerAdminAuth(fs *pflag.FlagSet) {
	fs.StringVar(&f.user, "admin-user", "", "SCRAM user for the admin API's basic authentication; $"+adminUserEnv+" when not given")
	fs.StringVar(&f.password, "admin-password", "", "its password (visible in the process list: prefer $"+adminPasswordEnv+")")
	fs.StringVar(&f.ca, "admin-ca", "", "PEM CA bundle to verify an https admin API with; $"+adminCAEnv+" when not given (default: the system's)")
	fs.StringVar(&f.cert, "admin-cert", "", "PEM client certificate for an admin API that asks for one; $"+adminCertEnv+" when not given")
	fs.StringVar(&f.key, "admin-key", "", "PEM key of --admin-cert; $"+adminKeyEnv+" when not given")
}

// flagOrEnv is the flag's value if it was given, else its environment variable's.
func flagOrEnv(cmd *cobra.Command, name, v, env string) string {
	if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
		return v
	}
	if e := os.Getenv(env); e != "" {
		return e
	}
	return v
}

// authorize sets the request's basic credentials, when a user is given.
func (f *adminAuthFlags) authorize(cmd *cobra.Command, req *http.Request) error {
	user := flagOrEnv(cmd, "admin-user", f.user, adminUserEnv)
	password := flagOrEnv(cmd, "admin-password", f.password, adminPasswordEnv)
	switch {
	case user == "" && password != "":
		return fmt.Errorf("an admin password without a user: give --admin-user or $%s", adminUserEnv)
	case user != "" && password == "":
		return fmt.Errorf("admin user %s without a password: give $%s or --admin-password", user, adminPasswordEnv)
	case user != "":
		req.SetBasicAuth(user, password)
	}
	return nil
}

// client is the HTTP client for the admin API: the default one unless a CA or a client
// certificate is given.
func (f *adminAuthFlags) client(cmd *cobra.Command) (*http.Client, error) {
	ca := flagOrEnv(cmd, "admin-ca", f.ca, adminCAEnv)
	cert := flagOrEnv(cmd, "admin-cert", f.cert, adminCertEnv)
	key := flagOrEnv(cmd, "admin-key", f.key, adminKeyEnv)
	if ca == "" && cert == "" && key == "" {
		return http.DefaultClient, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--admin-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--admin-ca %s holds no PEM certificate", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("--admin-cert and --admin-key go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--admin-cert/--admin-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr}, nil
}

// adminAuthHint is what to do about a 401 or 403 from the admin API.
func adminAuthHint(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "; give a SCRAM user with --admin-user (or $" + adminUserEnv + ") and its password in $" + adminPasswordEnv +
			" (or --admin-password), or a client certificate with --admin-cert and --admin-key"
	case http.StatusForbidden:
		return "; the user needs an ACL allowing DESCRIBE (reads) or ALTER (changes) on the CLUSTER resource"
	}
	return ""
}

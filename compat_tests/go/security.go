package main

// The security suite (issue #13), shared by the franz-go and sarama scenarios: the runner's
// `--security FILE` (listeners, certificates, users, the OAUTHBEARER token, the denied user) and
// what the rows have in common. A round trip row creates P-<kind> through the secured listener,
// produces 20 records and consumes them in a group with a commit, which is read back through the
// admin listener; a denied row passes only on the specific authorization error.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
)

type userPass struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// Security is the `--security FILE` document.
type Security struct {
	Listeners     map[string]string `json:"listeners"`
	CAPem         string            `json:"ca_pem"`
	ClientCertPem string            `json:"client_cert_pem"`
	ClientKeyPem  string            `json:"client_key_pem"`
	Plain         userPass          `json:"plain"`
	Scram         userPass          `json:"scram_sha_512"`
	OAuth         struct {
		Principal string `json:"principal"`
		Token     string `json:"token"`
	} `json:"oauthbearer"`
	Quota struct {
		ClientIDs        map[string]string `json:"client_ids"`
		ProducerByteRate float64           `json:"producer_byte_rate"`
	} `json:"quota"`
	Denied struct {
		userPass
		Mechanism string `json:"mechanism"`
		Listener  string `json:"listener"`
		Prefix    string `json:"prefix"`
	} `json:"denied"`
}

func loadSecurity(path string) (*Security, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Security
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// secWay is one way in: the listener, its protocol, the SASL mechanism ("" for none) and
// credentials; `what` describes it in the row's reason.
type secWay struct {
	listener, protocol, mechanism string
	user, password, token         string
	clientCert                    bool
	what                          string
}

// way returns how `kind` (scram, plain, mtls, oauthbearer, denied) connects.
func (c *Ctx) way(kind string) (secWay, error) {
	s := c.Sec
	if s == nil {
		return secWay{}, failf("a security scenario needs --security FILE (the runner's --suite security)")
	}
	var w secWay
	switch kind {
	case "scram":
		w = secWay{protocol: "SASL_SSL", mechanism: "SCRAM-SHA-512", user: s.Scram.User, password: s.Scram.Password,
			what: "SCRAM-SHA-512 over SASL_SSL as " + s.Scram.User}
	case "plain":
		w = secWay{protocol: "SASL_PLAINTEXT", mechanism: "PLAIN", user: s.Plain.User, password: s.Plain.Password,
			what: "PLAIN over SASL_PLAINTEXT as " + s.Plain.User}
	case "mtls":
		w = secWay{protocol: "SSL", clientCert: true, what: "SSL with the client certificate"}
	case "oauthbearer":
		w = secWay{protocol: "SASL_PLAINTEXT", mechanism: "OAUTHBEARER", token: s.OAuth.Token,
			what: "OAUTHBEARER (the file's unsecured token, sub=" + s.OAuth.Principal + ") over SASL_PLAINTEXT"}
	case "denied":
		d := s.Denied
		w = secWay{protocol: d.Listener, mechanism: d.Mechanism, user: d.User, password: d.Password,
			what: d.Mechanism + " over " + d.Listener + " as " + d.User}
	default:
		return secWay{}, fmt.Errorf("unknown security kind %q", kind)
	}
	w.listener = s.Listeners[w.protocol]
	if w.listener == "" {
		return secWay{}, failf("security file has no %s listener", w.protocol)
	}
	return w, nil
}

func (w secWay) tls() bool { return w.protocol == "SSL" || w.protocol == "SASL_SSL" }

// tlsConfig trusts the file's CA and, for mTLS, presents the client certificate.
func (c *Ctx) tlsConfig(w secWay) (*tls.Config, error) {
	ca, err := os.ReadFile(c.Sec.CAPem)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, failf("no certificate in %s", c.Sec.CAPem)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if w.clientCert {
		pair, err := tls.LoadX509KeyPair(c.Sec.ClientCertPem, c.Sec.ClientKeyPem)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Names of the rows' topics, groups and transactional ids (the contract's P-kind, denied-P-...).
func (c *Ctx) secTopic(kind string) string   { return c.Prefix + "-" + kind }
func (c *Ctx) deniedName(what string) string { return c.Sec.Denied.Prefix + c.Prefix + "-" + what }

func secValues(kind string) []string {
	out := make([]string, 20)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", kind, i)
	}
	return out
}

const roundTripNote = ": topic created, 20 produced, 20 consumed in a group, offset 20 committed"

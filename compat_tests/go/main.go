// Command compat-go is the Go driver of the compatibility matrix: franz-go (kgo, kadm) and
// IBM/sarama run the same scenarios. `--client franz-go|sarama --bootstrap HOST:PORT
// --scenario a,b --topic-prefix P --timeout S [--security FILE]` prints one JSON line per
// scenario (--security: the security suite's listeners and users, see security.go). Each
// scenario runs in its own goroutine with a context deadline; one that does not return in time
// becomes FAIL "timeout" and the run goes on (the process exits at the end regardless).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
)

type notSupported struct{ msg string }

func (e notSupported) Error() string { return e.msg }

type scenarioFunc func(c *Ctx) (string, error)

// Ctx carries what every scenario needs.
type Ctx struct {
	context.Context
	Bootstrap string
	Prefix    string
	Scenario  string
	Until     time.Time
	Sec       *Security // --security FILE (the security suite); nil when not given
}

func (c *Ctx) suffix() string { return uuid.NewString()[:6] }
func (c *Ctx) Topic(name string) string {
	if name != "" {
		name = "-" + name
	}
	return fmt.Sprintf("%s-%s%s-%s", c.Prefix, c.Scenario, name, c.suffix())
}
func (c *Ctx) Group() string { return fmt.Sprintf("%s-%s-g-%s", c.Prefix, c.Scenario, c.suffix()) }
func (c *Ctx) TxnID() string { return fmt.Sprintf("%s-%s-tx-%s", c.Prefix, c.Scenario, c.suffix()) }

// WaitFor calls step (if any) then cond until cond is true or the deadline passes.
func (c *Ctx) WaitFor(what string, cond func() (bool, error), step func()) error {
	var last error
	for {
		if step != nil {
			step()
		}
		ok, err := cond()
		if err != nil {
			last = err
		} else if ok {
			return nil
		}
		if time.Now().After(c.Until) {
			if last != nil {
				return fmt.Errorf("timed out waiting for %s (last error: %v)", what, last)
			}
			return fmt.Errorf("timed out waiting for %s", what)
		}
		if step == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func failf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// ---------------------------------------------------------------- shared scenario data

type kv struct{ Key, Value []byte }

func keyedRecords() []kv {
	out := make([]kv, 30)
	for i := range out {
		out[i] = kv{[]byte(fmt.Sprintf("k%d", i%10)), []byte(fmt.Sprintf("v%03d", i))}
	}
	return out
}

func compressibleValues() [][]byte {
	out := make([][]byte, 50)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("record-%04d-", i) + strings.Repeat("abcdefgh", 64))
	}
	return out
}

func largeValue() []byte {
	v := make([]byte, 2*1024*1024)
	for i := range v {
		v[i] = byte((i*7 + 3) % 251)
	}
	return v
}

type got struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
}

func checkProduceConsume(sent []kv, recs []got) error {
	if len(recs) != len(sent) {
		return failf("read %d records, produced %d", len(recs), len(sent))
	}
	partOf := map[string]int32{}
	parts := map[int32][]got{}
	for _, r := range recs {
		if p, ok := partOf[string(r.Key)]; ok && p != r.Partition {
			return failf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		partOf[string(r.Key)] = r.Partition
		parts[r.Partition] = append(parts[r.Partition], r)
	}
	if len(parts) < 2 {
		return failf("all keys landed in one partition")
	}
	seen := map[string]bool{}
	for p, rs := range parts {
		for i := 1; i < len(rs); i++ {
			if rs[i].Offset <= rs[i-1].Offset || bytes.Compare(rs[i].Value, rs[i-1].Value) <= 0 {
				return failf("partition %d not in produce order", p)
			}
		}
		for _, r := range rs {
			seen[string(r.Value)] = true
		}
	}
	if len(seen) != len(sent) {
		return failf("duplicates or losses")
	}
	return nil
}

func sortedStrings(vs []string) []string {
	out := append([]string(nil), vs...)
	sort.Strings(out)
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------- main

func emit(client, version, scenario, status, reason string) {
	b, _ := json.Marshal(map[string]string{
		"client": client, "client_version": version, "scenario": scenario, "status": status, "reason": reason,
	})
	os.Stdout.Write(append(b, '\n'))
}

var allScenarios = []string{
	"produce-consume", "compression-gzip", "compression-snappy", "compression-lz4", "compression-zstd",
	"headers-and-nulls", "large-message", "list-offsets", "admin-topics", "consumer-group",
	"idempotent-producer", "transactions", "consume-transform-produce", "fencing",
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return strings.TrimPrefix(d.Version, "v")
			}
		}
	}
	return "unknown"
}

func main() {
	client := flag.String("client", "franz-go", "franz-go or sarama")
	bootstrap := flag.String("bootstrap", "", "HOST:PORT")
	scenarioArg := flag.String("scenario", "all", "comma list")
	prefix := flag.String("topic-prefix", "go"+uuid.NewString()[:6], "topic prefix")
	timeout := flag.Float64("timeout", 45, "seconds per scenario")
	securityFile := flag.String("security", "", "the security suite's JSON (listeners, certificates, users)")
	flag.Parse()
	if *bootstrap == "" {
		fmt.Fprintln(os.Stderr, "--bootstrap is required")
		os.Exit(2)
	}
	var sec *Security
	if *securityFile != "" {
		var err error
		if sec, err = loadSecurity(*securityFile); err != nil {
			fmt.Fprintln(os.Stderr, "--security:", err)
			os.Exit(2)
		}
	}
	var table map[string]scenarioFunc
	var version string
	switch *client {
	case "franz-go":
		table, version = franzScenarios(), moduleVersion("github.com/twmb/franz-go")+" (kadm "+moduleVersion("github.com/twmb/franz-go/pkg/kadm")+")"
	case "sarama":
		table, version = saramaScenarios(), moduleVersion("github.com/IBM/sarama")
	default:
		fmt.Fprintln(os.Stderr, "unknown --client")
		os.Exit(2)
	}
	for name, fn := range clusterScenarios(*client) { // run.py --suite cluster (cluster.go)
		table[name] = fn
	}
	var names []string
	for _, s := range strings.Split(*scenarioArg, ",") {
		if s == "all" {
			names = append(names, allScenarios...)
		} else if s != "" {
			names = append(names, s)
		}
	}
	for _, name := range names {
		fn, ok := table[name]
		if !ok {
			emit(*client, version, name, "FAIL", "unknown scenario")
			continue
		}
		dur := time.Duration(*timeout * float64(time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), dur)
		c := &Ctx{Context: ctx, Bootstrap: *bootstrap, Prefix: *prefix, Scenario: name, Until: time.Now().Add(dur), Sec: sec}
		type result struct {
			note string
			err  error
		}
		done := make(chan result, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- result{err: fmt.Errorf("panic: %v", r)}
				}
			}()
			note, err := fn(c)
			done <- result{note, err}
		}()
		select {
		case r := <-done:
			var ns notSupported
			switch {
			case r.err == nil:
				emit(*client, version, name, "PASS", r.note)
			case errors.As(r.err, &ns):
				emit(*client, version, name, "NOT_SUPPORTED", ns.msg)
			default:
				emit(*client, version, name, "FAIL", r.err.Error())
			}
		case <-time.After(dur + 10*time.Second):
			emit(*client, version, name, "FAIL", "timeout")
		}
		cancel()
	}
	os.Exit(0)
}

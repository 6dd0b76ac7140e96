package main

// The cluster suite's rows (`run.py --suite cluster`) for franz-go and sarama. Each row asks
// the runner for its steps on stdout and reads the answers on stdin (the phase protocol of
// compat_tests/cluster_suite.py); the driver kills nothing itself.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	acksAllRecords = 300
	killAfter      = 100
)

var (
	askMu  sync.Mutex
	stdinR = bufio.NewReaderSize(os.Stdin, 1<<16)
)

type setupReply struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Group     string `json:"group"`
	Count     int    `json:"count"`
	Detail    string `json:"detail"`
}

// ask sends one step and returns the runner's answer (an error when it says ok: false).
func ask(c *Ctx, step string, data map[string]any) (setupReply, error) {
	var out setupReply
	req := map[string]any{"cluster": step, "scenario": c.Scenario}
	for k, v := range data {
		req[k] = v
	}
	b, _ := json.Marshal(req)
	askMu.Lock()
	os.Stdout.Write(append(b, '\n'))
	line, err := stdinR.ReadBytes('\n')
	askMu.Unlock()
	if err != nil {
		return out, fmt.Errorf("no answer from the runner to %s: %v", step, err)
	}
	var reply map[string]any
	if err := json.Unmarshal(line, &reply); err != nil {
		return out, err
	}
	if ok, _ := reply["ok"].(bool); !ok {
		return out, fmt.Errorf("%s: %v", step, reply["error"])
	}
	err = json.Unmarshal(line, &out)
	return out, err
}

func clusterScenarios(client string) map[string]scenarioFunc {
	if client == "sarama" {
		return map[string]scenarioFunc{
			"failover-acks-all":            srAcksAll,
			"failover-not-enough-replicas": srNotEnoughReplicas,
			"failover-group-coordinator":   srGroupCoordinator,
		}
	}
	return map[string]scenarioFunc{
		"failover-acks-all":            fgAcksAll,
		"failover-not-enough-replicas": fgNotEnoughReplicas,
		"failover-group-coordinator":   fgGroupCoordinator,
	}
}

func seeds(c *Ctx) []string { return strings.Split(c.Bootstrap, ",") }

func verifyThenRestore(c *Ctx, data map[string]any) (string, error) {
	v, err := ask(c, "verify", data)
	if err != nil {
		return "", err
	}
	if _, err := ask(c, "restore", nil); err != nil {
		return "", err
	}
	return v.Detail, nil
}

// ------------------------------------------------------------------ franz-go

func fgAcksAll(c *Ctx) (string, error) {
	s, err := ask(c, "setup", nil)
	if err != nil {
		return "", err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryTimeout(60*time.Second))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	var mu sync.Mutex
	var acked, failed []string
	for i := 0; i < acksAllRecords; i++ {
		if i == killAfter {
			if err := cl.Flush(c); err != nil {
				return "", err
			}
			if _, err := ask(c, "kill", nil); err != nil {
				return "", err
			}
		}
		v := strconv.Itoa(i)
		cl.Produce(c, &kgo.Record{Topic: s.Topic, Partition: int32(i % 3), Value: []byte(v)},
			func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err.Error())
				} else {
					acked = append(acked, v)
				}
			})
		time.Sleep(2 * time.Millisecond)
	}
	if err := cl.Flush(c); err != nil {
		return "", err
	}
	if len(failed) > 0 {
		return "", failf("%d delivery errors: %v", len(failed), failed[0])
	}
	return verifyThenRestore(c, map[string]any{"acked": acked})
}

func fgNotEnoughReplicas(c *Ctx) (string, error) {
	s, err := ask(c, "setup", nil)
	if err != nil {
		return "", err
	}
	if _, err := ask(c, "kill", nil); err != nil {
		return "", err
	}
	produce := func(acks kgo.Acks) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.RequiredAcks(acks),
			kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(15*time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		pctx, cancel := context.WithTimeout(c, 20*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: s.Topic, Partition: s.Partition, Value: []byte("x")}).FirstErr()
	}
	err = produce(kgo.AllISRAcks())
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		return "", failf("acks=all with one in-sync replica: %v, expected NOT_ENOUGH_REPLICAS", err)
	}
	if err1 := produce(kgo.LeaderAck()); err1 != nil {
		return "", failf("acks=1 with one in-sync replica failed: %v", err1)
	}
	if _, err := ask(c, "restore", nil); err != nil {
		return "", err
	}
	return "acks=all: " + err.Error() + "; acks=1 accepted", nil
}

func fgGroupCoordinator(c *Ctx) (string, error) {
	s, err := ask(c, "setup", nil)
	if err != nil {
		return "", err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumerGroup(s.Group),
		kgo.ConsumeTopics(s.Topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	seen := map[string]bool{}
	next := map[int32]kgo.EpochOffset{} // partition -> the offset after the last record read
	killed := false
	for len(seen) < s.Count && time.Now().Before(c.Until.Add(-10*time.Second)) {
		pctx, cancel := context.WithTimeout(c, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		for _, r := range fs.Records() {
			seen[string(r.Value)] = true
			next[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
			cctx, ccancel := context.WithTimeout(c, 10*time.Second)
			_ = cl.CommitRecords(cctx, r) // the coordinator moving: a later commit covers it
			ccancel()
			if len(seen) >= 20 && !killed {
				if _, err := ask(c, "kill", nil); err != nil {
					return "", err
				}
				killed = true
			}
		}
	}
	// Explicit offsets: after a commit failed while the coordinator moved, kgo's own idea of
	// what is uncommitted can leave a partition out (seen on Kafka 4.4).
	if err := c.WaitFor("a final commit", func() (bool, error) {
		var cerr error
		cl.CommitOffsetsSync(c, map[string]map[int32]kgo.EpochOffset{s.Topic: next},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				cerr = err
				if resp == nil {
					return
				}
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
							cerr = e
						}
					}
				}
			})
		return cerr == nil, cerr
	}, nil); err != nil {
		return "", err
	}
	values := make([]string, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	sort.Strings(values)
	return verifyThenRestore(c, map[string]any{"values": values})
}

// ------------------------------------------------------------------ sarama

func srClusterConfig() *sarama.Config {
	cfg := srConfig()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Errors = true
	cfg.Metadata.Retry.Max = 30
	cfg.Metadata.Retry.Backoff = 500 * time.Millisecond
	return cfg
}

func srAcksAll(c *Ctx) (string, error) {
	s, err := ask(c, "setup", nil)
	if err != nil {
		return "", err
	}
	cfg := srClusterConfig()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 1000
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	p, err := sarama.NewAsyncProducer(seeds(c), cfg)
	if err != nil {
		return "", err
	}
	var mu sync.Mutex
	var acked, failed []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m := range p.Successes() {
			b, _ := m.Value.Encode()
			mu.Lock()
			acked = append(acked, string(b))
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for e := range p.Errors() {
			mu.Lock()
			failed = append(failed, e.Error())
			mu.Unlock()
		}
	}()
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) + len(failed)
	}
	for i := 0; i < acksAllRecords; i++ {
		if i == killAfter {
			if err := c.WaitFor("the first records acknowledged", func() (bool, error) {
				return answered() == killAfter, nil
			}, nil); err != nil {
				p.AsyncClose()
				return "", err
			}
			if _, err := ask(c, "kill", nil); err != nil {
				p.AsyncClose()
				return "", err
			}
		}
		p.Input() <- &sarama.ProducerMessage{Topic: s.Topic, Partition: int32(i % 3),
			Value: sarama.StringEncoder(strconv.Itoa(i))}
		time.Sleep(2 * time.Millisecond)
	}
	werr := c.WaitFor("every record answered", func() (bool, error) {
		return answered() == acksAllRecords, nil
	}, nil)
	p.AsyncClose()
	wg.Wait()
	if werr != nil {
		return "", werr
	}
	if len(failed) > 0 {
		return "", failf("%d delivery errors: %v", len(failed), failed[0])
	}
	return verifyThenRestore(c, map[string]any{"acked": acked})
}

func srNotEnoughReplicas(c *Ctx) (string, error) {
	s, err := ask(c, "setup", nil)
	if err != nil {
		return "", err
	}
	if _, err := ask(c, "kill", nil); err != nil {
		return "", err
	}
	produce := func(acks sarama.RequiredAcks) error {
		cfg := srClusterConfig()
		cfg.Producer.RequiredAcks = acks
		cfg.Producer.Retry.Max = 0
		p, err := sarama.NewSyncProducer(seeds(c), cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: s.Topic, Partition: s.Partition,
			Value: sarama.StringEncoder("x")})
		return err
	}
	err = produce(sarama.WaitForAll)
	if !errors.Is(err, sarama.ErrNotEnoughReplicas) {
		return "", failf("acks=all with one in-sync replica: %v, expected ErrNotEnoughReplicas", err)
	}
	if err1 := produce(sarama.WaitForLocal); err1 != nil {
		return "", failf("acks=1 with one in-sync replica failed: %v", err1)
	}
	if _, err := ask(c, "restore", nil); err != nil {
		return "", err
	}
	return "acks=all: " + err.Error() + "; acks=1 accepted", nil
}

type srCommitter struct {
	c      *Ctx
	mu     sync.Mutex
	seen   map[string]bool
	killed bool
	kerr   error
}

func (m *srCommitter) Setup(sarama.ConsumerGroupSession) error { return nil }
func (m *srCommitter) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (m *srCommitter) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		s.MarkMessage(msg, "")
		s.Commit() // synchronous; a failure leaves the offset marked for the next commit
		m.mu.Lock()
		m.seen[string(msg.Value)] = true
		kill := len(m.seen) >= 20 && !m.killed
		m.killed = m.killed || kill
		m.mu.Unlock()
		if kill {
			if _, err := ask(m.c, "kill", nil); err != nil {
				m.mu.Lock()
				m.kerr = err
				m.mu.Unlock()
			}
		}
	}
	return nil
}

func srGroupCoordinator(c *Ctx) (string, error) {
	s, err := ask(c, "setup", nil)
	if err != nil {
		return "", err
	}
	cfg := srClusterConfig()
	g, err := sarama.NewConsumerGroup(seeds(c), s.Group, cfg)
	if err != nil {
		return "", err
	}
	m := &srCommitter{c: c, seen: map[string]bool{}}
	gctx, cancel := context.WithCancel(c)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for gctx.Err() == nil {
			_ = g.Consume(gctx, []string{s.Topic}, m)
		}
	}()
	count := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.seen)
	}
	werr := c.WaitFor(fmt.Sprintf("%d records", s.Count), func() (bool, error) {
		return count() >= s.Count, nil
	}, nil)
	cancel() // the session's Cleanup commits the marked offsets
	<-done
	g.Close()
	if werr != nil {
		return "", werr
	}
	if m.kerr != nil {
		return "", m.kerr
	}
	values := make([]string, 0, len(m.seen))
	for v := range m.seen {
		values = append(values, v)
	}
	sort.Strings(values)
	return verifyThenRestore(c, map[string]any{"values": values})
}

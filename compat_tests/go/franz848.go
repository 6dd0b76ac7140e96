package main

// KIP-848 (consumer protocol) scenarios of the franz-go driver. kgo opts in with
// kgo.ServerSideBalancer() (v1.22; the hidden context key "opt_in_kafka_next_gen_balancer_beta"
// before it): with the default cooperative-sticky balancer the broker's "uniform" assignor
// runs. kgo falls back to the classic protocol silently when the broker lacks
// ConsumerGroupHeartbeat v1, so each scenario counts the requests its members write and
// fails unless they heartbeat with ConsumerGroupHeartbeat and never send JoinGroup.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	keyJoinGroup              = 11
	keyConsumerGroupHeartbeat = 68
)

// apiCount counts the requests of a few api keys a client writes (a kgo hook).
type apiCount struct{ join, heartbeat atomic.Int64 }

func (a *apiCount) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch key {
	case keyJoinGroup:
		a.join.Add(1)
	case keyConsumerGroupHeartbeat:
		a.heartbeat.Add(1)
	}
}

// consumerProtocolUsed: an error unless the members spoke KIP-848 only.
func (a *apiCount) consumerProtocolUsed() error {
	if j := a.join.Load(); j > 0 {
		return failf("the members sent %d JoinGroup requests: kgo fell back to the classic protocol", j)
	}
	if a.heartbeat.Load() == 0 {
		return failf("no ConsumerGroupHeartbeat request was sent")
	}
	return nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// fg848Member is a consumer-protocol member. Rebalances wait for AllowRebalance
// (BlockRebalanceOnPoll), which poll calls only after committing what it read: a
// revocation takes effect between polls, after the commit, as in the Java and
// confluent-kafka drivers.
type fg848Member struct {
	name string
	cl   *kgo.Client
	mu   sync.Mutex
	own  map[topicPartition]bool
	// ever holds every partition the member was ever assigned.
	ever map[topicPartition]bool
}

func newFg848Member(c *Ctx, name, group string, count *apiCount, regex bool, topics ...string) (*fg848Member, error) {
	m := &fg848Member{name: name, own: map[topicPartition]bool{}, ever: map[topicPartition]bool{}}
	update := func(ps map[string][]int32, add bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for t, parts := range ps {
			for _, p := range parts {
				tp := topicPartition{t, p}
				if add {
					m.own[tp] = true
					m.ever[tp] = true
				} else {
					delete(m.own, tp)
				}
			}
		}
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.WithHooks(count),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { update(a, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { update(r, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { update(r, false) }),
	}
	if regex {
		opts = append(opts, kgo.ConsumeRegex())
	}
	cl, err := fgClient(c, opts...)
	m.cl = cl
	return m, err
}

func (m *fg848Member) owned() map[topicPartition]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[topicPartition]bool, len(m.own))
	for tp := range m.own {
		out[tp] = true
	}
	return out
}

func (m *fg848Member) everOwned() map[topicPartition]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[topicPartition]bool, len(m.ever))
	for tp := range m.ever {
		out[tp] = true
	}
	return out
}

func (m *fg848Member) partitions(topic string) []int32 {
	var out []int32
	for tp := range m.owned() {
		if tp.topic == topic {
			out = append(out, tp.partition)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// poll reads for up to 50 ms, checks each record (owned, never seen before), records it in
// seen, commits the batch and then lets a pending rebalance go on. The first problem found
// is returned (and stays the scenario's failure).
func (m *fg848Member) poll(c *Ctx, seen map[string]string) error {
	defer m.cl.AllowRebalance()
	pctx, cancel := context.WithTimeout(c, 50*time.Millisecond)
	fs := m.cl.PollFetches(pctx)
	cancel()
	var ferr error
	fs.EachError(func(t string, p int32, e error) {
		if !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) && ferr == nil {
			ferr = fmt.Errorf("%s: fetch error on %s/%d: %w", m.name, t, p, e)
		}
	})
	if ferr != nil {
		return ferr
	}
	recs := fs.Records()
	if len(recs) == 0 {
		return nil
	}
	own := m.owned()
	for _, r := range recs {
		if !own[topicPartition{r.Topic, r.Partition}] {
			return failf("%s got a record of %s/%d, which it does not own", m.name, r.Topic, r.Partition)
		}
		v := string(r.Value)
		if before, dup := seen[v]; dup {
			return failf("%s consumed twice: by %s and by %s", v, before, m.name)
		}
		seen[v] = m.name
	}
	if err := m.cl.CommitRecords(c, recs...); err != nil {
		return fmt.Errorf("%s: commit: %w", m.name, err)
	}
	return nil
}

func fgProduceTo(c *Ctx, recs []*kgo.Record) error {
	return fgProduce(c, recs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
}

// fgConsumerProtocolGroup: KIP-848, three members, one leaves and comes back; every record once.
// kgo cannot rejoin after leaving, so B leaves by closing its client (a leave heartbeat,
// member epoch -1) and rejoins as a new client (a new member id, epoch 0).
func fgConsumerProtocolGroup(c *Ctx) (string, error) {
	t := c.Topic("")
	const n = 6
	if err := fgCreate(c, t, n, nil); err != nil {
		return "", err
	}
	g := c.Group()
	count := &apiCount{}
	seen := map[string]string{}
	var members []*fg848Member
	defer func() {
		for _, m := range members {
			m.cl.Close()
		}
	}()
	join := func(name string) (*fg848Member, error) {
		m, err := newFg848Member(c, name, g, count, false, t)
		if err == nil {
			members = append(members, m)
		}
		return m, err
	}
	a, err := join("A")
	if err != nil {
		return "", err
	}
	b, err := join("B")
	if err != nil {
		return "", err
	}
	cm, err := join("C")
	if err != nil {
		return "", err
	}
	var pollErr error
	live := []*fg848Member{a, b, cm}
	pollAll := func() {
		for _, m := range live {
			if pollErr == nil {
				pollErr = m.poll(c, seen)
			}
		}
	}
	sizes := func(ms []*fg848Member) string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s=%v", m.name, m.partitions(t)))
		}
		return strings.Join(out, " ")
	}
	balanced := func(ms []*fg848Member) bool {
		union, total, lo := map[int32]bool{}, 0, n/len(ms)
		for _, m := range ms {
			ps := m.partitions(t)
			if len(ps) < lo || len(ps) > lo+1 {
				return false
			}
			total += len(ps)
			for _, p := range ps {
				union[p] = true
			}
		}
		return total == n && len(union) == n
	}
	waitBalanced := func(what string) error {
		return c.WaitFor(what, func() (bool, error) {
			if pollErr != nil {
				return false, pollErr
			}
			return balanced(live), nil
		}, pollAll)
	}
	if err := waitBalanced("A, B and C owning 2+2+2"); err != nil {
		return "", fmt.Errorf("%w (%s)", err, sizes(live))
	}
	produced := 0
	for round := 0; round < 3; round++ {
		switch round {
		case 1:
			b.cl.Close() // leaves the group (member epoch -1)
			live = []*fg848Member{a, cm}
			if err := waitBalanced("A and C owning 3+3 after B left"); err != nil {
				return "", fmt.Errorf("%w (%s)", err, sizes(live))
			}
		case 2:
			b, err = join("B") // joins again (member epoch 0)
			if err != nil {
				return "", err
			}
			live = []*fg848Member{a, b, cm}
			if err := waitBalanced("2+2+2 after B rejoined"); err != nil {
				return "", fmt.Errorf("%w (%s)", err, sizes(live))
			}
		}
		var recs []*kgo.Record
		for p := int32(0); p < n; p++ {
			for i := 0; i < 5; i++ {
				recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: []byte(fmt.Sprintf("r%d-p%d-%d", round, p, i))})
			}
		}
		if err := fgProduceTo(c, recs); err != nil {
			return "", err
		}
		produced += len(recs)
		if err := c.WaitFor(fmt.Sprintf("%d records consumed", produced), func() (bool, error) {
			if pollErr != nil {
				return false, pollErr
			}
			return len(seen) >= produced, nil
		}, pollAll); err != nil {
			return "", fmt.Errorf("%w (have %d)", err, len(seen))
		}
		if !balanced(live) {
			return "", failf("assignment changed while consuming: %s", sizes(live))
		}
	}
	if len(seen) != 90 {
		return "", failf("consumed %d distinct records, expected the 90 produced", len(seen))
	}
	for round := 0; round < 3; round++ {
		for p := 0; p < n; p++ {
			for i := 0; i < 5; i++ {
				if _, ok := seen[fmt.Sprintf("r%d-p%d-%d", round, p, i)]; !ok {
					return "", failf("r%d-p%d-%d was never consumed", round, p, i)
				}
			}
		}
	}
	byB := false
	for v, who := range seen {
		if who == "B" && strings.HasPrefix(v, "r1-") {
			return "", failf("B consumed %s while it was out of the group", v)
		}
		if who == "B" && strings.HasPrefix(v, "r2-") {
			byB = true
		}
	}
	if !byB {
		return "", failf("B consumed nothing after rejoining")
	}
	if err := count.consumerProtocolUsed(); err != nil {
		return "", err
	}
	offs, err := kadm.NewClient(a.cl).FetchOffsets(c, g)
	if err != nil {
		return "", err
	}
	for p := int32(0); p < n; p++ {
		if o, ok := offs.Lookup(t, p); !ok || o.Err != nil || o.At != 15 {
			return "", failf("committed offset of partition %d: %v (%v), expected 15", p, o.At, o.Err)
		}
	}
	return fmt.Sprintf("kgo.ServerSideBalancer; 3 members, B left (client closed) and rejoined as a new client; "+
		"90 records once each; %d heartbeats, no JoinGroup", count.heartbeat.Load()), nil
}

// fgConsumerProtocolRegex: a member subscribed by regex (kgo.ConsumeRegex under
// ServerSideBalancer; kgo sends it as SubscribedTopicRegex, wrapped in .*(?:...).*, and the
// broker resolves it) picks up a matching topic created after it joined.
func fgConsumerProtocolRegex(c *Ctx) (string, error) {
	base := c.Topic("")
	m1, m2, n1, n2 := base+"-m1", base+"-m2", base+"-n1", base+"-m2x"
	pattern := "^" + base + "-m[0-9]+$"
	for _, tp := range []struct {
		name string
		n    int32
	}{{m1, 3}, {n1, 2}} {
		if err := fgCreate(c, tp.name, tp.n, nil); err != nil {
			return "", err
		}
	}
	parts := map[string]int32{m1: 3, m2: 2, n1: 2, n2: 2}
	batch := func(topic, tag string) []*kgo.Record {
		var recs []*kgo.Record
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % parts[topic],
				Value: []byte(fmt.Sprintf("%s/%s-%d", topic, tag, i))})
		}
		return recs
	}
	if err := fgProduceTo(c, append(batch(m1, "before"), batch(n1, "before")...)); err != nil {
		return "", err
	}
	g := c.Group()
	count := &apiCount{}
	m, err := newFg848Member(c, "M", g, count, true, pattern)
	if err != nil {
		return "", err
	}
	defer m.cl.Close()
	seen := map[string]string{}
	var pollErr error
	step := func() {
		if pollErr == nil {
			pollErr = m.poll(c, seen)
		}
	}
	owns := func(want map[string]int) func() (bool, error) {
		return func() (bool, error) {
			if pollErr != nil {
				return false, pollErr
			}
			total := 0
			for topic, k := range want {
				if len(m.partitions(topic)) != k {
					return false, nil
				}
				total += k
			}
			return len(m.owned()) == total, nil
		}
	}
	if err := c.WaitFor("M owning the 3 partitions of "+m1, owns(map[string]int{m1: 3}), step); err != nil {
		return "", fmt.Errorf("%w (owns %v)", err, m.owned())
	}
	if err := c.WaitFor("the 10 records of "+m1, func() (bool, error) { return len(seen) >= 10, pollErr }, step); err != nil {
		return "", fmt.Errorf("%w (have %d)", err, len(seen))
	}
	joined := time.Now()
	for _, tp := range []string{m2, n2} {
		if err := fgCreate(c, tp, parts[tp], nil); err != nil {
			return "", err
		}
	}
	var recs []*kgo.Record
	for _, topic := range []string{m1, m2, n1, n2} {
		recs = append(recs, batch(topic, "after")...)
	}
	if err := fgProduceTo(c, recs); err != nil {
		return "", err
	}
	if err := c.WaitFor("M owning the 3 partitions of "+m1+" and the 2 of the new "+m2,
		owns(map[string]int{m1: 3, m2: 2}), step); err != nil {
		return "", fmt.Errorf("%w (owns %v)", err, m.owned())
	}
	pickedUp := time.Since(joined)
	if err := c.WaitFor("the 30 records of the matching topics", func() (bool, error) { return len(seen) >= 30, pollErr }, step); err != nil {
		return "", fmt.Errorf("%w (have %d)", err, len(seen))
	}
	// A few more polls: a duplicate or a record of another topic would show now.
	for end := time.Now().Add(time.Second); time.Now().Before(end) && pollErr == nil; {
		step()
	}
	if pollErr != nil {
		return "", pollErr
	}
	want := map[string]bool{}
	for _, r := range append(append(batch(m1, "before"), batch(m1, "after")...), batch(m2, "after")...) {
		want[string(r.Value)] = true
	}
	if len(seen) != len(want) {
		return "", failf("consumed %d distinct records, expected the %d of %s and %s", len(seen), len(want), m1, m2)
	}
	for v := range want {
		if _, ok := seen[v]; !ok {
			return "", failf("%s was never consumed", v)
		}
	}
	for tp := range m.everOwned() {
		if tp.topic != m1 && tp.topic != m2 {
			return "", failf("M was assigned %s/%d, which the regex does not match", tp.topic, tp.partition)
		}
	}
	if err := count.consumerProtocolUsed(); err != nil {
		return "", err
	}
	adm := kadm.NewClient(m.cl)
	ends, err := adm.ListEndOffsets(c, m1, m2)
	if err != nil {
		return "", err
	}
	offs, err := adm.FetchOffsets(c, g)
	if err != nil {
		return "", err
	}
	var bad []string
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := offs.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
			bad = append(bad, fmt.Sprintf("%s/%d committed %d, end %d", e.Topic, e.Partition, o.At, e.Offset))
		}
	})
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == n1 || o.Topic == n2 {
			bad = append(bad, fmt.Sprintf("%s/%d committed %d", o.Topic, o.Partition, o.At))
		}
	})
	if len(bad) > 0 {
		sort.Strings(bad)
		return "", failf("committed offsets: %s", strings.Join(bad, "; "))
	}
	described, err := adm.DescribeConsumerGroups(c, g)
	if err != nil {
		return "", err
	}
	var regex []string
	for _, mem := range described[g].Members {
		if mem.SubscribedTopicRegex != nil {
			regex = append(regex, *mem.SubscribedTopicRegex)
		}
	}
	if len(regex) != 1 {
		return "", failf("ConsumerGroupDescribe shows no subscribed regex for the member (%v)", regex)
	}
	return fmt.Sprintf("kgo.ConsumeRegex + ServerSideBalancer, SubscribedTopicRegex %q; new topic assigned %.1f s "+
		"after its creation began; 30 records once each", regex[0], pickedUp.Seconds()), nil
}

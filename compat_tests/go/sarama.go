package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

func saramaScenarios() map[string]scenarioFunc {
	m := map[string]scenarioFunc{
		"produce-consume":           srProduceConsume,
		"compression-gzip":          srCompression(sarama.CompressionGZIP),
		"compression-snappy":        srCompression(sarama.CompressionSnappy),
		"compression-lz4":           srCompression(sarama.CompressionLZ4),
		"compression-zstd":          srCompression(sarama.CompressionZSTD),
		"headers-and-nulls":         srHeaders,
		"large-message":             srLarge,
		"list-offsets":              srListOffsets,
		"admin-topics":              srAdmin,
		"consumer-group":            srGroup,
		"idempotent-producer":       srIdempotent,
		"transactions":              srTransactions,
		"consume-transform-produce": srCTP,
		"fencing":                   srFencing,
	}
	for k, f := range saramaSecurityScenarios() {
		m[k] = f
	}
	return m
}

func srConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "odradek-compat-sarama"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	cfg.Net.DialTimeout = 10 * time.Second
	cfg.Net.ReadTimeout = 20 * time.Second
	cfg.Admin.Timeout = 15 * time.Second
	return cfg
}

func srCreate(c *Ctx, topic string, partitions int32, configs map[string]*string) error {
	adm, err := sarama.NewClusterAdmin([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}, false); err != nil {
		return err
	}
	return c.WaitFor("topic "+topic+" in metadata", func() (bool, error) {
		md, err := adm.DescribeTopics([]string{topic})
		if err != nil {
			return false, err
		}
		if len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != int(partitions) {
			return false, nil
		}
		for _, p := range md[0].Partitions {
			if p.Leader < 0 {
				return false, nil
			}
		}
		return true, nil
	}, nil)
}

func srProduce(c *Ctx, msgs []*sarama.ProducerMessage, tune func(*sarama.Config)) error {
	cfg := srConfig()
	if tune != nil {
		tune(cfg)
	}
	p, err := sarama.NewSyncProducer([]string{c.Bootstrap}, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.SendMessages(msgs)
}

func srRead(c *Ctx, topic string, partitions int32, count int, tune func(*sarama.Config)) ([]*sarama.ConsumerMessage, error) {
	cfg := srConfig()
	if tune != nil {
		tune(cfg)
	}
	cons, err := sarama.NewConsumer([]string{c.Bootstrap}, cfg)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	ch := make(chan *sarama.ConsumerMessage, 1024)
	errs := make(chan error, 16)
	for p := int32(0); p < partitions; p++ {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		defer pc.AsyncClose()
		go func() {
			for m := range pc.Messages() {
				ch <- m
			}
		}()
		go func() {
			for e := range pc.Errors() {
				select {
				case errs <- e:
				default:
				}
			}
		}()
	}
	var out []*sarama.ConsumerMessage
	var last error
	err = c.WaitFor(fmt.Sprintf("%d records", count), func() (bool, error) { return len(out) >= count, last }, func() {
		select {
		case m := <-ch:
			out = append(out, m)
		case e := <-errs:
			last = e
		case <-time.After(100 * time.Millisecond):
		}
	})
	return out, err
}

func svalues(ms []*sarama.ConsumerMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Value)
	}
	return out
}

func srProduceConsume(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := srCreate(c, t, 3, nil); err != nil {
		return "", err
	}
	sent := keyedRecords()
	var msgs []*sarama.ProducerMessage
	for _, r := range sent {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Key: sarama.ByteEncoder(r.Key), Value: sarama.ByteEncoder(r.Value)})
	}
	if err := srProduce(c, msgs, nil); err != nil {
		return "", err
	}
	rs, err := srRead(c, t, 3, len(sent), nil)
	if err != nil {
		return "", err
	}
	var g []got
	for _, r := range rs {
		g = append(g, got{r.Partition, r.Offset, r.Key, r.Value})
	}
	return "", checkProduceConsume(sent, g)
}

func srCompression(codec sarama.CompressionCodec) scenarioFunc {
	return func(c *Ctx) (string, error) {
		t := c.Topic("")
		if err := srCreate(c, t, 1, nil); err != nil {
			return "", err
		}
		vals := compressibleValues()
		var msgs []*sarama.ProducerMessage
		for _, v := range vals {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Value: sarama.ByteEncoder(v)})
		}
		if err := srProduce(c, msgs, func(cfg *sarama.Config) {
			cfg.Producer.Compression = codec
			cfg.Producer.Flush.Frequency = 100 * time.Millisecond
		}); err != nil {
			return "", err
		}
		rs, err := srRead(c, t, 1, len(vals), nil)
		if err != nil {
			return "", err
		}
		for i, r := range rs {
			if !bytes.Equal(r.Value, vals[i]) || r.Offset != int64(i) {
				return "", failf("record %d differs after the round trip", i)
			}
		}
		return "", nil
	}
}

func srHdrs(hs []*sarama.RecordHeader) []string {
	var out []string
	for _, h := range hs {
		v := string(h.Value)
		if h.Value == nil {
			v = "<null>"
		}
		out = append(out, string(h.Key), v)
	}
	return out
}

func srHeaders(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	msgs := []*sarama.ProducerMessage{
		{Topic: t, Value: sarama.ByteEncoder("v-null-key"), Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte("1")}, {Key: []byte("h"), Value: []byte("2")}, {Key: []byte("empty"), Value: []byte{}}}},
		{Topic: t, Key: sarama.ByteEncoder("k-tombstone")},
		{Topic: t, Key: sarama.ByteEncoder([]byte{}), Value: sarama.ByteEncoder([]byte{})},
		{Topic: t, Key: sarama.ByteEncoder("k"), Value: sarama.ByteEncoder("v"), Headers: []sarama.RecordHeader{{Key: []byte("nullhdr"), Value: nil}}},
	}
	if err := srProduce(c, msgs, nil); err != nil {
		return "", err
	}
	rs, err := srRead(c, t, 1, 4, nil)
	if err != nil {
		return "", err
	}
	if rs[0].Key != nil || string(rs[0].Value) != "v-null-key" || string(rs[1].Key) != "k-tombstone" || rs[1].Value != nil ||
		rs[2].Key == nil || len(rs[2].Key) != 0 || rs[2].Value == nil || len(rs[2].Value) != 0 {
		return "", failf("keys/values differ: %q/%q %q/%q %q/%q", rs[0].Key, rs[0].Value, rs[1].Key, rs[1].Value, rs[2].Key, rs[2].Value)
	}
	if h := srHdrs(rs[0].Headers); !equalStrings(h, []string{"h", "1", "h", "2", "empty", ""}) {
		return "", failf("headers differ: %v", h)
	}
	if len(rs[1].Headers)+len(rs[2].Headers) != 0 {
		return "", failf("unexpected headers")
	}
	if h := srHdrs(rs[3].Headers); !equalStrings(h, []string{"nullhdr", "<null>"}) {
		return "", failf("null header value differs: %v", h)
	}
	return "null header value included", nil
}

func srLarge(c *Ctx) (string, error) {
	t := c.Topic("")
	max := "4194304"
	if err := srCreate(c, t, 1, map[string]*string{"max.message.bytes": &max}); err != nil {
		return "", err
	}
	v := largeValue()
	if err := srProduce(c, []*sarama.ProducerMessage{{Topic: t, Value: sarama.ByteEncoder(v)}}, func(cfg *sarama.Config) {
		cfg.Producer.MaxMessageBytes = 5_000_000
	}); err != nil {
		return "", err
	}
	rs, err := srRead(c, t, 1, 1, nil)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(rs[0].Value, v) {
		return "", failf("value differs")
	}
	return "", nil
}

func srListOffsets(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 3; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Value: sarama.StringEncoder(fmt.Sprintf("r%d", i)), Timestamp: t0.Add(time.Duration(i) * time.Second)})
	}
	if err := srProduce(c, msgs, nil); err != nil {
		return "", err
	}
	cl, err := sarama.NewClient([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ms := t0.UnixMilli()
	for _, q := range []struct {
		what string
		ts   int64
		want int64
	}{
		{"earliest", sarama.OffsetOldest, 0}, {"latest", sarama.OffsetNewest, 3},
		{"by time T+500", ms + 500, 1}, {"by time T+1000", ms + 1000, 1}, {"by time after the last record", ms + 10000, -1},
	} {
		o, err := cl.GetOffset(t, 0, q.ts)
		if err != nil {
			return "", fmt.Errorf("%s: %w", q.what, err)
		}
		if o != q.want {
			return "", failf("%s: %d, expected %d", q.what, o, q.want)
		}
	}
	return "", nil
}

func srAdmin(c *Ctx) (string, error) {
	adm, err := sarama.NewClusterAdmin([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return "", err
	}
	defer adm.Close()
	t := c.Topic("")
	ret := "3600000"
	if err := adm.CreateTopic(t, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1, ConfigEntries: map[string]*string{"retention.ms": &ret}}, false); err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	if err := adm.CreateTopic(t, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return "", failf("create again: %v", err)
	}
	partitions := func(n int) func() (bool, error) {
		return func() (bool, error) {
			md, err := adm.DescribeTopics([]string{t})
			if err != nil || len(md) != 1 {
				return false, err
			}
			k := 0
			for _, p := range md[0].Partitions {
				if p.Leader >= 0 {
					k++
				}
			}
			return k == n, nil
		}
	}
	if err := c.WaitFor("2 partitions with leaders", partitions(2), nil); err != nil {
		return "", err
	}
	res := sarama.ConfigResource{Type: sarama.TopicResource, Name: t}
	retention := func() (string, error) {
		es, err := adm.DescribeConfig(res)
		if err != nil {
			return "", err
		}
		for _, e := range es {
			if e.Name == "retention.ms" {
				return e.Value, nil
			}
		}
		return "", nil
	}
	if v, err := retention(); err != nil || v != "3600000" {
		return "", failf("retention.ms = %q (%v)", v, err)
	}
	nv := "7200000"
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, t, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &nv}}, false); err != nil {
		return "", fmt.Errorf("alter: %w", err)
	}
	if err := c.WaitFor("altered retention.ms", func() (bool, error) { v, err := retention(); return v == "7200000", err }, nil); err != nil {
		return "", err
	}
	if err := adm.CreatePartitions(t, 4, nil, false); err != nil {
		return "", fmt.Errorf("partitions to 4: %w", err)
	}
	if err := c.WaitFor("4 partitions", partitions(4), nil); err != nil {
		return "", err
	}
	if err := adm.CreatePartitions(t, 3, nil, false); !errors.Is(err, sarama.ErrInvalidPartitions) {
		return "", failf("decrease: %v", err)
	}
	if err := adm.DeleteTopic(t); err != nil {
		return "", fmt.Errorf("delete: %w", err)
	}
	return "", c.WaitFor("topic gone", func() (bool, error) {
		ts, err := adm.ListTopics()
		if err != nil {
			return false, err
		}
		_, ok := ts[t]
		return !ok, nil
	}, nil)
}

// srMember runs sarama's group Consume loop and tracks its claims and records.
type srMember struct {
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	own    map[int32]bool
	recs   []*sarama.ConsumerMessage
	sess   sarama.ConsumerGroupSession
}

func (m *srMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sess = s
	m.own = map[int32]bool{}
	for _, ps := range s.Claims() {
		for _, p := range ps {
			m.own[p] = true
		}
	}
	return nil
}

func (m *srMember) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.own = map[int32]bool{}
	m.sess = nil
	return nil
}

func (m *srMember) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		m.mu.Lock()
		m.recs = append(m.recs, msg)
		m.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

func (m *srMember) owned() map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]bool{}
	for p := range m.own {
		out[p] = true
	}
	return out
}

func (m *srMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

func (m *srMember) commit() error {
	m.mu.Lock()
	s := m.sess
	m.mu.Unlock()
	if s == nil {
		return failf("no session to commit in")
	}
	s.Commit()
	return nil
}

func (m *srMember) close() {
	m.cancel()
	<-m.done
	m.group.Close()
}

func newSrMember(c *Ctx, g, topic string) (*srMember, error) {
	return newSrMemberWith(c, []string{c.Bootstrap}, srConfig(), g, topic)
}

// newSrMemberWith: a member dialing `brokers` with `cfg` (the security rows' listeners).
func newSrMemberWith(c *Ctx, brokers []string, cfg *sarama.Config, g, topic string) (*srMember, error) {
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	grp, err := sarama.NewConsumerGroup(brokers, g, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(c)
	m := &srMember{group: grp, cancel: cancel, done: make(chan struct{}), own: map[int32]bool{}}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := grp.Consume(ctx, []string{topic}, m); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return m, nil
}

func srGroup(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := srCreate(c, t, 4, nil); err != nil {
		return "", err
	}
	g := c.Group()
	a, err := newSrMember(c, g, t)
	if err != nil {
		return "", err
	}
	if err := c.WaitFor("A owns all 4 partitions", func() (bool, error) { return len(a.owned()) == 4, nil }, nil); err != nil {
		a.close()
		return "", err
	}
	b, err := newSrMember(c, g, t)
	if err != nil {
		return "", err
	}
	if err := c.WaitFor("A and B 2+2", func() (bool, error) {
		pa, pb := a.owned(), b.owned()
		u := map[int32]bool{}
		for p := range pa {
			u[p] = true
		}
		for p := range pb {
			u[p] = true
		}
		return len(pa) == 2 && len(pb) == 2 && len(u) == 4, nil
	}, nil); err != nil {
		a.close()
		b.close()
		return "", err
	}
	pa, pb := a.owned(), b.owned()
	var msgs []*sarama.ProducerMessage
	for p := int32(0); p < 4; p++ {
		for i := 0; i < 10; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Partition: p, Value: sarama.StringEncoder(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	manual := func(cfg *sarama.Config) { cfg.Producer.Partitioner = sarama.NewManualPartitioner }
	if err := srProduce(c, msgs, manual); err != nil {
		return "", err
	}
	if err := c.WaitFor("40 records", func() (bool, error) { return a.count()+b.count() >= 40, nil }, nil); err != nil {
		return "", err
	}
	if a.count()+b.count() != 40 {
		return "", failf("duplicates")
	}
	for _, r := range a.recs {
		if !pa[r.Partition] {
			return "", failf("record from a partition A does not own")
		}
	}
	for _, r := range b.recs {
		if !pb[r.Partition] {
			return "", failf("record from a partition B does not own")
		}
	}
	if err := a.commit(); err != nil {
		return "", err
	}
	if err := b.commit(); err != nil {
		return "", err
	}
	b.close()
	a.mu.Lock()
	a.recs = nil
	a.mu.Unlock()
	if err := c.WaitFor("A owns all 4 after B left", func() (bool, error) { return len(a.owned()) == 4, nil }, nil); err != nil {
		return "", err
	}
	msgs = nil
	var want []string
	for p := int32(0); p < 4; p++ {
		for i := 0; i < 2; i++ {
			v := fmt.Sprintf("p%d-x%d", p, i)
			want = append(want, v)
			msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Partition: p, Value: sarama.StringEncoder(v)})
		}
	}
	if err := srProduce(c, msgs, manual); err != nil {
		return "", err
	}
	if err := c.WaitFor("8 new records on A", func() (bool, error) { return a.count() >= 8, nil }, nil); err != nil {
		return "", err
	}
	a.mu.Lock()
	gv := sortedStrings(svalues(a.recs))
	a.mu.Unlock()
	if !equalStrings(gv, sortedStrings(want)) {
		return "", failf("A did not resume at the commits: %v", gv)
	}
	if err := a.commit(); err != nil {
		return "", err
	}
	a.close()
	msgs, want = nil, nil
	for p := int32(0); p < 4; p++ {
		v := fmt.Sprintf("p%d-y", p)
		want = append(want, v)
		msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Partition: p, Value: sarama.StringEncoder(v)})
	}
	if err := srProduce(c, msgs, manual); err != nil {
		return "", err
	}
	m, err := newSrMember(c, g, t)
	if err != nil {
		return "", err
	}
	defer m.close()
	if err := c.WaitFor("4 records on C", func() (bool, error) { return m.count() >= 4, nil }, nil); err != nil {
		return "", err
	}
	m.mu.Lock()
	gv = sortedStrings(svalues(m.recs))
	m.mu.Unlock()
	if !equalStrings(gv, sortedStrings(want)) {
		return "", failf("C did not resume at A's commits: %v", gv)
	}
	// C commits nothing itself: the group's offsets are still A's (12 per partition).
	adm, err := sarama.NewClusterAdmin([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return "", err
	}
	defer adm.Close()
	resp, err := adm.ListConsumerGroupOffsets(g, map[string][]int32{t: {0, 1, 2, 3}})
	if err != nil {
		return "", err
	}
	for p := int32(0); p < 4; p++ {
		b := resp.GetBlock(t, p)
		if b == nil || b.Offset != 12 {
			return "", failf("committed offset of partition %d: %+v", p, b)
		}
	}
	return "", nil
}

func srIdempotent(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	var msgs []*sarama.ProducerMessage
	var want []string
	for i := 0; i < 100; i++ {
		v := fmt.Sprintf("i%03d", i)
		want = append(want, v)
		msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Value: sarama.StringEncoder(v)})
	}
	if err := srProduce(c, msgs, func(cfg *sarama.Config) {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}); err != nil {
		return "", err
	}
	rs, err := srRead(c, t, 1, 100, nil)
	if err != nil {
		return "", err
	}
	for i, r := range rs {
		if r.Offset != int64(i) {
			return "", failf("offsets not contiguous 0..99")
		}
	}
	if !equalStrings(svalues(rs), want) {
		return "", failf("values duplicated, lost or reordered")
	}
	return "", nil
}

func srTxProducer(c *Ctx, id string) (sarama.SyncProducer, error) {
	cfg := srConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Transaction.Timeout = 60 * time.Second
	cfg.Net.MaxOpenRequests = 1
	return sarama.NewSyncProducer([]string{c.Bootstrap}, cfg)
}

func readCommitted(cfg *sarama.Config) { cfg.Consumer.IsolationLevel = sarama.ReadCommitted }

func srTransactions(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	p, err := srTxProducer(c, c.TxnID())
	if err != nil {
		return "", err
	}
	defer p.Close()
	var committed, all []string
	for _, tag := range []string{"c1", "a", "c2"} {
		if err := p.BeginTxn(); err != nil {
			return "", err
		}
		var msgs []*sarama.ProducerMessage
		for i := 0; i < 5; i++ {
			v := fmt.Sprintf("%s-%d", tag, i)
			all = append(all, v)
			if tag != "a" {
				committed = append(committed, v)
			}
			msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Value: sarama.StringEncoder(v)})
		}
		if err := p.SendMessages(msgs); err != nil {
			return "", err
		}
		if tag == "a" {
			err = p.AbortTxn()
		} else {
			err = p.CommitTxn()
		}
		if err != nil {
			return "", fmt.Errorf("end %s: %w", tag, err)
		}
	}
	rc, err := srRead(c, t, 1, 10, readCommitted)
	if err != nil {
		return "", err
	}
	if !equalStrings(svalues(rc), committed) {
		return "", failf("read_committed saw %v", svalues(rc))
	}
	ru, err := srRead(c, t, 1, 15, nil)
	if err != nil {
		return "", err
	}
	if !equalStrings(svalues(ru), all) {
		return "", failf("read_uncommitted saw %v", svalues(ru))
	}
	return "", nil
}

func srCTP(c *Ctx) (string, error) {
	src, dst := c.Topic("in"), c.Topic("out")
	if err := srCreate(c, src, 1, nil); err != nil {
		return "", err
	}
	if err := srCreate(c, dst, 1, nil); err != nil {
		return "", err
	}
	g := c.Group()
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 10; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: src, Value: sarama.StringEncoder(fmt.Sprintf("in-%d", i))})
	}
	if err := srProduce(c, msgs, nil); err != nil {
		return "", err
	}
	m, err := newSrMember(c, g, src)
	if err != nil {
		return "", err
	}
	defer m.close()
	p, err := srTxProducer(c, c.TxnID())
	if err != nil {
		return "", err
	}
	defer p.Close()
	adm, err := sarama.NewClusterAdmin([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return "", err
	}
	defer adm.Close()
	committedAt := func() (int64, error) {
		resp, err := adm.ListConsumerGroupOffsets(g, map[string][]int32{src: {0}})
		if err != nil {
			return -1, err
		}
		b := resp.GetBlock(src, 0)
		if b == nil {
			return -1, nil
		}
		return b.Offset, nil
	}
	// The member marks messages but never commits on its own: offsets go through the transaction.
	process := func(from, n int, commit bool) error {
		if err := c.WaitFor(fmt.Sprintf("%d inputs", n), func() (bool, error) { return m.count() >= from+n, nil }, nil); err != nil {
			return err
		}
		m.mu.Lock()
		in := append([]*sarama.ConsumerMessage(nil), m.recs[from:]...)
		m.mu.Unlock()
		if len(in) != n {
			return failf("read %d inputs, expected %d", len(in), n)
		}
		if err := p.BeginTxn(); err != nil {
			return err
		}
		var out []*sarama.ProducerMessage
		for _, r := range in {
			out = append(out, &sarama.ProducerMessage{Topic: dst, Value: sarama.ByteEncoder(bytes.ToUpper(r.Value))})
		}
		if err := p.SendMessages(out); err != nil {
			return err
		}
		last := in[len(in)-1]
		if err := p.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{src: {{Partition: 0, Offset: last.Offset + 1}}}, g); err != nil {
			return err
		}
		if commit {
			return p.CommitTxn()
		}
		return p.AbortTxn()
	}
	if err := process(0, 10, true); err != nil {
		return "", err
	}
	if err := c.WaitFor("committed offset 10 after the commit", func() (bool, error) { o, err := committedAt(); return o == 10, err }, nil); err != nil {
		return "", err
	}
	msgs = nil
	for i := 10; i < 15; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: src, Value: sarama.StringEncoder(fmt.Sprintf("in-%d", i))})
	}
	if err := srProduce(c, msgs, nil); err != nil {
		return "", err
	}
	if err := process(10, 5, false); err != nil {
		return "", err
	}
	if o, err := committedAt(); err != nil || o != 10 {
		return "", failf("committed offset %d after the aborted transaction (%v)", o, err)
	}
	out, err := srRead(c, dst, 1, 10, readCommitted)
	if err != nil {
		return "", err
	}
	var want []string
	for i := 0; i < 10; i++ {
		want = append(want, fmt.Sprintf("IN-%d", i))
	}
	if !equalStrings(svalues(out), want) {
		return "", failf("outputs %v", svalues(out))
	}
	cl, err := sarama.NewClient([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return "", err
	}
	defer cl.Close()
	end, err := cl.GetOffset(dst, 0, sarama.OffsetNewest)
	if err != nil || end != 17 {
		return "", failf("output end offset %d, expected 17 (10 + marker + 5 + marker) (%v)", end, err)
	}
	return "group member with manual marks; AddOffsetsToTxn", nil
}

func srFencing(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	id := c.TxnID()
	p1, err := srTxProducer(c, id)
	if err != nil {
		return "", err
	}
	defer p1.Close()
	if err := p1.BeginTxn(); err != nil {
		return "", err
	}
	if _, _, err := p1.SendMessage(&sarama.ProducerMessage{Topic: t, Value: sarama.StringEncoder("from-p1")}); err != nil {
		return "", err
	}
	p2, err := srTxProducer(c, id) // InitProducerId at construction: fences p1
	if err != nil {
		return "", err
	}
	defer p2.Close()
	err = p1.CommitTxn()
	if err == nil {
		return "", failf("the fenced producer committed")
	}
	if !errors.Is(err, sarama.ErrProducerFenced) && !errors.Is(err, sarama.ErrInvalidProducerEpoch) &&
		!strings.Contains(strings.ToLower(err.Error()), "fenced") && !strings.Contains(strings.ToLower(err.Error()), "epoch") {
		return "", failf("unexpected error for the fenced producer: %v", err)
	}
	if err := p2.BeginTxn(); err != nil {
		return "", err
	}
	if _, _, err := p2.SendMessage(&sarama.ProducerMessage{Topic: t, Value: sarama.StringEncoder("from-p2")}); err != nil {
		return "", err
	}
	if err := p2.CommitTxn(); err != nil {
		return "", err
	}
	rs, err := srRead(c, t, 1, 1, readCommitted)
	if err != nil {
		return "", err
	}
	if !equalStrings(svalues(rs), []string{"from-p2"}) {
		return "", failf("read_committed saw %v", svalues(rs))
	}
	return "", nil
}

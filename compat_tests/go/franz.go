package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func franzScenarios() map[string]scenarioFunc {
	m := map[string]scenarioFunc{
		"produce-consume":           fgProduceConsume,
		"compression-gzip":          fgCompression(kgo.GzipCompression()),
		"compression-snappy":        fgCompression(kgo.SnappyCompression()),
		"compression-lz4":           fgCompression(kgo.Lz4Compression()),
		"compression-zstd":          fgCompression(kgo.ZstdCompression()),
		"headers-and-nulls":         fgHeaders,
		"large-message":             fgLarge,
		"list-offsets":              fgListOffsets,
		"admin-topics":              fgAdmin,
		"consumer-group":            fgGroup,
		"idempotent-producer":       fgIdempotent,
		"transactions":              fgTransactions,
		"consume-transform-produce": fgCTP,
		"fencing":                   fgFencing,
		"idle-fetch-sessions":       fgIdleFetchSessions,
		"consumer-protocol-group":   fgConsumerProtocolGroup,
		"consumer-protocol-regex":   fgConsumerProtocolRegex,
		"share-group-split":         fgShareGroupSplit,
	}
	for k, f := range franzSecurityScenarios() {
		m[k] = f
	}
	return m
}

func fgClient(c *Ctx, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(c.Bootstrap),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RequestTimeoutOverhead(10 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
	}
	return kgo.NewClient(append(base, opts...)...)
}

func fgCreate(c *Ctx, topic string, partitions int32, configs map[string]*string) error {
	cl, err := fgClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(c, partitions, 1, configs, topic)
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return resp.Err
	}
	return c.WaitFor("topic "+topic+" in metadata", func() (bool, error) {
		md, err := adm.Metadata(c, topic)
		if err != nil {
			return false, err
		}
		t, ok := md.Topics[topic]
		if !ok || t.Err != nil || len(t.Partitions) != int(partitions) {
			return false, nil
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return false, nil
			}
		}
		return true, nil
	}, nil)
}

func fgProduce(c *Ctx, recs []*kgo.Record, opts ...kgo.Opt) error {
	cl, err := fgClient(c, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.ProduceSync(c, recs...).FirstErr()
}

func fgRead(c *Ctx, topic string, partitions int32, count int, opts ...kgo.Opt) ([]*kgo.Record, error) {
	offs := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl, err := fgClient(c, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	var ferr error
	err = c.WaitFor(fmt.Sprintf("%d records", count), func() (bool, error) { return len(out) >= count, ferr }, func() {
		pctx, cancel := context.WithTimeout(c, 200*time.Millisecond)
		defer cancel()
		fs := cl.PollFetches(pctx)
		fs.EachError(func(t string, p int32, e error) {
			if !errors.Is(e, context.DeadlineExceeded) {
				ferr = e
			}
		})
		out = append(out, fs.Records()...)
	})
	return out, err
}

func values(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

func fgProduceConsume(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 3, nil); err != nil {
		return "", err
	}
	sent := keyedRecords()
	var recs []*kgo.Record
	for _, r := range sent {
		recs = append(recs, &kgo.Record{Topic: t, Key: r.Key, Value: r.Value})
	}
	if err := fgProduce(c, recs); err != nil {
		return "", err
	}
	rs, err := fgRead(c, t, 3, len(sent))
	if err != nil {
		return "", err
	}
	var g []got
	for _, r := range rs {
		g = append(g, got{r.Partition, r.Offset, r.Key, r.Value})
	}
	// kgo polls partitions concurrently: order is per partition, which is what is checked.
	return "", checkProduceConsume(sent, g)
}

func fgCompression(codec kgo.CompressionCodec) scenarioFunc {
	return func(c *Ctx) (string, error) {
		t := c.Topic("")
		if err := fgCreate(c, t, 1, nil); err != nil {
			return "", err
		}
		vals := compressibleValues()
		var recs []*kgo.Record
		for _, v := range vals {
			recs = append(recs, &kgo.Record{Topic: t, Value: v})
		}
		if err := fgProduce(c, recs, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(100*time.Millisecond)); err != nil {
			return "", err
		}
		rs, err := fgRead(c, t, 1, len(vals))
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

func hdrs(hs []kgo.RecordHeader) []string {
	var out []string
	for _, h := range hs {
		v := string(h.Value)
		if h.Value == nil {
			v = "<null>"
		}
		out = append(out, h.Key, v)
	}
	return out
}

func fgHeaders(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	recs := []*kgo.Record{
		{Topic: t, Key: nil, Value: []byte("v-null-key"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")}, {Key: "empty", Value: []byte{}}}},
		{Topic: t, Key: []byte("k-tombstone"), Value: nil},
		{Topic: t, Key: []byte{}, Value: []byte{}},
		{Topic: t, Key: []byte("k"), Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "nullhdr", Value: nil}}},
	}
	if err := fgProduce(c, recs); err != nil {
		return "", err
	}
	rs, err := fgRead(c, t, 1, 4)
	if err != nil {
		return "", err
	}
	if rs[0].Key != nil || string(rs[0].Value) != "v-null-key" || string(rs[1].Key) != "k-tombstone" || rs[1].Value != nil ||
		rs[2].Key == nil || len(rs[2].Key) != 0 || rs[2].Value == nil || len(rs[2].Value) != 0 {
		return "", failf("keys/values differ: %q/%q %q/%q %q/%q", rs[0].Key, rs[0].Value, rs[1].Key, rs[1].Value, rs[2].Key, rs[2].Value)
	}
	if h := hdrs(rs[0].Headers); !equalStrings(h, []string{"h", "1", "h", "2", "empty", ""}) {
		return "", failf("headers differ: %v", h)
	}
	if len(rs[1].Headers)+len(rs[2].Headers) != 0 {
		return "", failf("unexpected headers")
	}
	if h := hdrs(rs[3].Headers); !equalStrings(h, []string{"nullhdr", "<null>"}) {
		return "", failf("null header value differs: %v", h)
	}
	return "null header value included", nil
}

func fgLarge(c *Ctx) (string, error) {
	t := c.Topic("")
	max := "4194304"
	if err := fgCreate(c, t, 1, map[string]*string{"max.message.bytes": &max}); err != nil {
		return "", err
	}
	v := largeValue()
	if err := fgProduce(c, []*kgo.Record{{Topic: t, Value: v}}, kgo.ProducerBatchMaxBytes(5_000_000)); err != nil {
		return "", err
	}
	rs, err := fgRead(c, t, 1, 1)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(rs[0].Value, v) {
		return "", failf("value differs")
	}
	return "", nil
}

func fgListOffsets(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := 0; i < 3; i++ {
		recs = append(recs, &kgo.Record{Topic: t, Value: []byte(fmt.Sprintf("r%d", i)), Timestamp: t0.Add(time.Duration(i) * time.Second)})
	}
	if err := fgProduce(c, recs); err != nil {
		return "", err
	}
	cl, err := fgClient(c)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	get := func(l kadm.ListedOffsets, err error) (int64, error) {
		if err != nil {
			return 0, err
		}
		o, ok := l.Lookup(t, 0)
		if !ok {
			return 0, failf("no offset listed")
		}
		return o.Offset, o.Err
	}
	ms := t0.UnixMilli()
	for _, q := range []struct {
		what string
		f    func() (kadm.ListedOffsets, error)
		want int64
	}{
		{"earliest", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(c, t) }, 0},
		{"latest", func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(c, t) }, 3},
		{"by time T+500", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(c, ms+500, t) }, 1},
		{"by time T+1000", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(c, ms+1000, t) }, 1},
		// kadm documents that a time after the last record lists the end offset (Kafka's -1 translated).
		{"by time after the last record", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(c, ms+10000, t) }, 3},
	} {
		o, err := get(q.f())
		if err != nil {
			return "", fmt.Errorf("%s: %w", q.what, err)
		}
		if o != q.want {
			return "", failf("%s: %d, expected %d", q.what, o, q.want)
		}
	}
	return "kadm lists a time after the last record as the end offset (its documented mapping of -1)", nil
}

func fgAdmin(c *Ctx) (string, error) {
	cl, err := fgClient(c)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t := c.Topic("")
	ret := "3600000"
	r, err := adm.CreateTopic(c, 2, 1, map[string]*string{"retention.ms": &ret}, t)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	r, err = adm.CreateTopic(c, 2, 1, nil, t)
	if err == nil {
		err = r.Err
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return "", failf("create again: %v", err)
	}
	partitions := func() (int, error) {
		md, err := adm.Metadata(c, t)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range md.Topics[t].Partitions {
			if p.Leader >= 0 {
				n++
			}
		}
		return n, nil
	}
	want := func(n int) func() (bool, error) {
		return func() (bool, error) { got, err := partitions(); return got == n, err }
	}
	if err := c.WaitFor("2 partitions with leaders", want(2), nil); err != nil {
		return "", err
	}
	retention := func() (string, error) {
		rcs, err := adm.DescribeTopicConfigs(c, t)
		if err != nil {
			return "", err
		}
		rc, err := rcs.On(t, nil)
		if err != nil {
			return "", err
		}
		if rc.Err != nil {
			return "", rc.Err
		}
		for _, e := range rc.Configs {
			if e.Key == "retention.ms" {
				return e.MaybeValue(), nil
			}
		}
		return "", nil
	}
	if v, err := retention(); err != nil || v != "3600000" {
		return "", failf("retention.ms = %q (%v)", v, err)
	}
	nv := "7200000"
	ar, err := adm.AlterTopicConfigs(c, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &nv}}, t)
	if err == nil {
		_, err = ar.On(t, nil)
	}
	if err != nil {
		return "", fmt.Errorf("alter: %w", err)
	}
	if err := c.WaitFor("altered retention.ms", func() (bool, error) { v, err := retention(); return v == "7200000", err }, nil); err != nil {
		return "", err
	}
	cp, err := adm.UpdatePartitions(c, 4, t)
	if err == nil {
		err = cp.Error()
	}
	if err != nil {
		return "", fmt.Errorf("partitions to 4: %w", err)
	}
	if err := c.WaitFor("4 partitions", want(4), nil); err != nil {
		return "", err
	}
	cp, err = adm.UpdatePartitions(c, 3, t)
	if err == nil {
		err = cp.Error()
	}
	if !errors.Is(err, kerr.InvalidPartitions) {
		return "", failf("decrease: %v", err)
	}
	dr, err := adm.DeleteTopics(c, t)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		return "", fmt.Errorf("delete: %w", err)
	}
	return "", c.WaitFor("topic gone", func() (bool, error) {
		ts, err := adm.ListTopics(c)
		return err == nil && !ts.Has(t), err
	}, nil)
}

// fgMember is a group member whose assignment is tracked by the rebalance callbacks.
type fgMember struct {
	cl   *kgo.Client
	mu   sync.Mutex
	own  map[int32]bool
	recs []*kgo.Record
}

func newFgMember(c *Ctx, group, topic string) (*fgMember, error) {
	m := &fgMember{own: map[int32]bool{}}
	cl, err := fgClient(c, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[topic] {
				m.own[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.own, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.own, p)
			}
		}))
	m.cl = cl
	return m, err
}

func (m *fgMember) owned() map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]bool{}
	for p := range m.own {
		out[p] = true
	}
	return out
}

func (m *fgMember) poll(c *Ctx) {
	pctx, cancel := context.WithTimeout(c, 100*time.Millisecond)
	defer cancel()
	fs := m.cl.PollFetches(pctx)
	m.recs = append(m.recs, fs.Records()...)
}

func fgGroup(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 4, nil); err != nil {
		return "", err
	}
	g := c.Group()
	a, err := newFgMember(c, g, t)
	if err != nil {
		return "", err
	}
	defer a.cl.Close()
	if err := c.WaitFor("A owns all 4 partitions", func() (bool, error) { return len(a.owned()) == 4, nil }, func() { a.poll(c) }); err != nil {
		return "", err
	}
	b, err := newFgMember(c, g, t)
	if err != nil {
		return "", err
	}
	defer b.cl.Close()
	both := func() { a.poll(c); b.poll(c) }
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
	}, both); err != nil {
		return "", err
	}
	pa, pb := a.owned(), b.owned()
	var recs []*kgo.Record
	for p := int32(0); p < 4; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	if err := fgProduce(c, recs, kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		return "", err
	}
	if err := c.WaitFor("40 records", func() (bool, error) { return len(a.recs)+len(b.recs) >= 40, nil }, both); err != nil {
		return "", err
	}
	if len(a.recs)+len(b.recs) != 40 {
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
	if err := a.cl.CommitUncommittedOffsets(c); err != nil {
		return "", fmt.Errorf("commit A: %w", err)
	}
	if err := b.cl.CommitUncommittedOffsets(c); err != nil {
		return "", fmt.Errorf("commit B: %w", err)
	}
	b.cl.Close() // leaves the group
	a.recs = nil
	if err := c.WaitFor("A owns all 4 after B left", func() (bool, error) { return len(a.owned()) == 4, nil }, func() { a.poll(c) }); err != nil {
		return "", err
	}
	recs = nil
	var want []string
	for p := int32(0); p < 4; p++ {
		for i := 0; i < 2; i++ {
			v := fmt.Sprintf("p%d-x%d", p, i)
			want = append(want, v)
			recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: []byte(v)})
		}
	}
	if err := fgProduce(c, recs, kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		return "", err
	}
	if err := c.WaitFor("8 new records on A", func() (bool, error) { return len(a.recs) >= 8, nil }, func() { a.poll(c) }); err != nil {
		return "", err
	}
	if gv := sortedStrings(values(a.recs)); !equalStrings(gv, sortedStrings(want)) {
		return "", failf("A did not resume at the commits: %v", gv)
	}
	if err := a.cl.CommitUncommittedOffsets(c); err != nil {
		return "", fmt.Errorf("commit A: %w", err)
	}
	a.cl.Close()
	recs, want = nil, nil
	for p := int32(0); p < 4; p++ {
		v := fmt.Sprintf("p%d-y", p)
		want = append(want, v)
		recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: []byte(v)})
	}
	if err := fgProduce(c, recs, kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		return "", err
	}
	cm, err := newFgMember(c, g, t)
	if err != nil {
		return "", err
	}
	defer cm.cl.Close()
	if err := c.WaitFor("4 records on C", func() (bool, error) { return len(cm.recs) >= 4, nil }, func() { cm.poll(c) }); err != nil {
		return "", err
	}
	if gv := sortedStrings(values(cm.recs)); !equalStrings(gv, sortedStrings(want)) {
		return "", failf("C did not resume at A's commits: %v", gv)
	}
	// C commits nothing: the group's offsets are still A's (12 per partition).
	adm := kadm.NewClient(cm.cl)
	offs, err := adm.FetchOffsets(c, g)
	if err != nil {
		return "", err
	}
	for p := int32(0); p < 4; p++ {
		o, ok := offs.Lookup(t, p)
		if !ok || o.At != 12 {
			return "", failf("committed offset of partition %d: %v", p, o.At)
		}
	}
	return "", nil
}

func fgIdempotent(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	var recs []*kgo.Record
	var want []string
	for i := 0; i < 100; i++ {
		v := fmt.Sprintf("i%03d", i)
		want = append(want, v)
		recs = append(recs, &kgo.Record{Topic: t, Value: []byte(v)})
	}
	// kgo writes idempotently unless told otherwise (DisableIdempotentWrite).
	if err := fgProduce(c, recs); err != nil {
		return "", err
	}
	rs, err := fgRead(c, t, 1, 100)
	if err != nil {
		return "", err
	}
	for i, r := range rs {
		if r.Offset != int64(i) {
			return "", failf("offsets not contiguous 0..99")
		}
		if r.ProducerID < 0 {
			return "", failf("record without a producer id: not idempotent")
		}
	}
	if !equalStrings(values(rs), want) {
		return "", failf("values duplicated, lost or reordered")
	}
	return "", nil
}

func fgTxClient(c *Ctx, id string, opts ...kgo.Opt) (*kgo.Client, error) {
	return fgClient(c, append([]kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(60 * time.Second)}, opts...)...)
}

func fgTransactions(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	cl, err := fgTxClient(c, c.TxnID())
	if err != nil {
		return "", err
	}
	defer cl.Close()
	var committed, all []string
	for _, tag := range []string{"c1", "a", "c2"} {
		if err := cl.BeginTransaction(); err != nil {
			return "", err
		}
		var recs []*kgo.Record
		for i := 0; i < 5; i++ {
			v := fmt.Sprintf("%s-%d", tag, i)
			all = append(all, v)
			if tag != "a" {
				committed = append(committed, v)
			}
			recs = append(recs, &kgo.Record{Topic: t, Value: []byte(v)})
		}
		if err := cl.ProduceSync(c, recs...).FirstErr(); err != nil {
			return "", err
		}
		end := kgo.TryCommit
		if tag == "a" {
			end = kgo.TryAbort
		}
		if err := cl.EndTransaction(c, end); err != nil {
			return "", fmt.Errorf("end %s: %w", tag, err)
		}
	}
	rc, err := fgRead(c, t, 1, 10, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return "", err
	}
	if !equalStrings(values(rc), committed) {
		return "", failf("read_committed saw %v", values(rc))
	}
	ru, err := fgRead(c, t, 1, 15, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	if err != nil {
		return "", err
	}
	if !equalStrings(values(ru), all) {
		return "", failf("read_uncommitted saw %v", values(ru))
	}
	return "", nil
}

func fgCTP(c *Ctx) (string, error) {
	src, dst := c.Topic("in"), c.Topic("out")
	if err := fgCreate(c, src, 1, nil); err != nil {
		return "", err
	}
	if err := fgCreate(c, dst, 1, nil); err != nil {
		return "", err
	}
	g := c.Group()
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: src, Value: []byte(fmt.Sprintf("in-%d", i))})
	}
	if err := fgProduce(c, recs); err != nil {
		return "", err
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Bootstrap), kgo.TransactionalID(c.TxnID()), kgo.TransactionTimeout(60*time.Second),
		kgo.ConsumerGroup(g), kgo.ConsumeTopics(src), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequireStableFetchOffsets(), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return "", err
	}
	defer sess.Close()
	adm := kadm.NewClient(sess.Client())
	committedAt := func() (int64, error) {
		offs, err := adm.FetchOffsets(c, g)
		if err != nil {
			return -1, err
		}
		o, ok := offs.Lookup(src, 0)
		if !ok {
			return -1, nil
		}
		return o.At, o.Err
	}
	process := func(n int, commit bool) error {
		var in []*kgo.Record
		if err := c.WaitFor(fmt.Sprintf("%d inputs", n), func() (bool, error) { return len(in) >= n, nil }, func() {
			pctx, cancel := context.WithTimeout(c, 200*time.Millisecond)
			defer cancel()
			in = append(in, sess.PollFetches(pctx).Records()...)
		}); err != nil {
			return err
		}
		if len(in) != n {
			return failf("read %d inputs, expected %d", len(in), n)
		}
		if err := sess.Begin(); err != nil {
			return err
		}
		for _, r := range in {
			out := &kgo.Record{Topic: dst, Value: bytes.ToUpper(r.Value)}
			if err := sess.ProduceSync(c, out).FirstErr(); err != nil {
				return err
			}
		}
		try := kgo.TryCommit
		if !commit {
			try = kgo.TryAbort
		}
		committed, err := sess.End(c, try)
		if err != nil {
			return err
		}
		if committed != commit {
			return failf("transaction committed=%v, wanted %v", committed, commit)
		}
		return nil
	}
	if err := process(10, true); err != nil {
		return "", err
	}
	if err := c.WaitFor("committed offset 10 after the commit", func() (bool, error) { o, err := committedAt(); return o == 10, err }, nil); err != nil {
		return "", err
	}
	recs = nil
	for i := 10; i < 15; i++ {
		recs = append(recs, &kgo.Record{Topic: src, Value: []byte(fmt.Sprintf("in-%d", i))})
	}
	if err := fgProduce(c, recs); err != nil {
		return "", err
	}
	if err := process(5, false); err != nil {
		return "", err
	}
	if o, err := committedAt(); err != nil || o != 10 {
		return "", failf("committed offset %d after the aborted transaction (%v)", o, err)
	}
	out, err := fgRead(c, dst, 1, 10, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return "", err
	}
	var want []string
	for i := 0; i < 10; i++ {
		want = append(want, fmt.Sprintf("IN-%d", i))
	}
	if !equalStrings(values(out), want) {
		return "", failf("outputs %v", values(out))
	}
	ends, err := adm.ListEndOffsets(c, dst)
	if err != nil {
		return "", err
	}
	if o, _ := ends.Lookup(dst, 0); o.Offset != 17 {
		return "", failf("output end offset %d, expected 17 (10 + marker + 5 + marker)", o.Offset)
	}
	return "kgo.GroupTransactSession", nil
}

func fgFencing(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	id := c.TxnID()
	p1, err := fgTxClient(c, id)
	if err != nil {
		return "", err
	}
	defer p1.Close()
	if err := p1.BeginTransaction(); err != nil {
		return "", err
	}
	if err := p1.ProduceSync(c, &kgo.Record{Topic: t, Value: []byte("from-p1")}).FirstErr(); err != nil {
		return "", err
	}
	p2, err := fgTxClient(c, id)
	if err != nil {
		return "", err
	}
	defer p2.Close()
	if _, _, err := p2.ProducerID(c); err != nil { // InitProducerId: fences p1
		return "", fmt.Errorf("p2 init: %w", err)
	}
	err = p1.EndTransaction(c, kgo.TryCommit)
	if err == nil {
		return "", failf("the fenced producer committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidProducerIDMapping) {
		return "", failf("unexpected error for the fenced producer: %v", err)
	}
	if err := p2.BeginTransaction(); err != nil {
		return "", err
	}
	if err := p2.ProduceSync(c, &kgo.Record{Topic: t, Value: []byte("from-p2")}).FirstErr(); err != nil {
		return "", err
	}
	if err := p2.EndTransaction(c, kgo.TryCommit); err != nil {
		return "", err
	}
	rs, err := fgRead(c, t, 1, 1, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return "", err
	}
	if !equalStrings(values(rs), []string{"from-p2"}) {
		return "", failf("read_committed saw %v", values(rs))
	}
	return "", nil
}

// fetchWire records the bytes of every Fetch request written and response read (kgo hooks).
type fetchWire struct {
	mu     sync.Mutex
	writes []wireEvent
	reads  []wireEvent
}

type wireEvent struct {
	at    time.Time
	bytes int
}

func (w *fetchWire) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, _ error) {
	if key == 1 {
		w.mu.Lock()
		w.writes = append(w.writes, wireEvent{time.Now(), n})
		w.mu.Unlock()
	}
}

func (w *fetchWire) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, _ error) {
	if key == 1 {
		w.mu.Lock()
		w.reads = append(w.reads, wireEvent{time.Now(), n})
		w.mu.Unlock()
	}
}

// since returns the count, largest and average size of the events after t.
func since(evs []wireEvent, t time.Time) (int, int, float64) {
	n, largest, total := 0, 0, 0
	for _, e := range evs {
		if e.at.After(t) {
			n++
			total += e.bytes
			if e.bytes > largest {
				largest = e.bytes
			}
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	return n, largest, float64(total) / float64(n)
}

const idlePartitions = 1000

// fgIdleFetchSessions: franz-go keeps KIP-227 fetch sessions; the Fetch bytes on the wire in
// the last 2 s of 4 s of idle polling over 1000 empty partitions show the session at work.
func fgIdleFetchSessions(c *Ctx) (string, error) {
	topic := c.Topic("")
	if err := fgCreate(c, topic, idlePartitions, nil); err != nil {
		return "", err
	}
	// Every partition answers ListOffsets first (a broker may take a while to open 1000 new
	// logs), so the idle window is not the session still growing.
	adm, err := fgClient(c)
	if err != nil {
		return "", err
	}
	err = c.WaitFor("end offsets of all partitions", func() (bool, error) {
		ends, err := kadm.NewClient(adm).ListEndOffsets(c, topic)
		if err != nil {
			return false, nil
		}
		ok := 0
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				ok++
			}
		})
		return ok == idlePartitions, nil
	}, nil)
	adm.Close()
	if err != nil {
		return "", err
	}
	offs := map[int32]kgo.Offset{}
	for p := int32(0); p < idlePartitions; p++ {
		offs[p] = kgo.NewOffset().AtStart()
	}
	wire := &fetchWire{}
	cl, err := fgClient(c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.WithHooks(wire))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		pctx, cancel := context.WithTimeout(c, 100*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if n := fs.NumRecords(); n > 0 {
			return "", failf("an empty topic returned %d records", n)
		}
	}
	window := time.Now().Add(-2 * time.Second)
	wire.mu.Lock()
	fetches, reqMax, _ := since(wire.writes, window)
	_, _, respAvg := since(wire.reads, window)
	wire.mu.Unlock()
	if fetches < 5 {
		return "", failf("only %d Fetch requests in the last 2 s of idle polling", fetches)
	}
	if reqMax >= 1000 {
		return "", failf("largest idle request %d bytes: no fetch session?", reqMax)
	}
	if respAvg >= 1000 {
		return "", failf("average idle response %.0f bytes: no fetch session?", respAvg)
	}
	return fmt.Sprintf("idle: %d fetches in 2 s, largest request %d B, average response %.0f B",
		fetches, reqMax, respAvg), nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func franzSecurityScenarios() map[string]scenarioFunc {
	return map[string]scenarioFunc{
		"sasl-scram-sha-512": fgSecRoundTrip("scram"),
		"sasl-plain":         fgSecRoundTrip("plain"),
		"mtls":               fgSecRoundTrip("mtls"),
		"sasl-oauthbearer":   fgSecRoundTrip("oauthbearer"),
		"acl-denied-produce": fgDeniedProduce,
		"acl-denied-consume": fgDeniedConsume,
		"acl-denied-group":   fgDeniedGroup,
		"acl-denied-txn":     fgDeniedTxn,
		"quota-throttle":     fgQuotaThrottle,
	}
}

// fgSecOpts: the seed broker, TLS (kgo.DialTLSConfig) and SASL mechanism of one way in.
func fgSecOpts(c *Ctx, kind string) ([]kgo.Opt, secWay, error) {
	w, err := c.way(kind)
	if err != nil {
		return nil, w, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(w.listener)}
	if w.tls() {
		cfg, err := c.tlsConfig(w)
		if err != nil {
			return nil, w, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	var mech sasl.Mechanism
	switch w.mechanism {
	case "":
	case "PLAIN":
		mech = plain.Auth{User: w.user, Pass: w.password}.AsMechanism()
	case "SCRAM-SHA-512":
		mech = scram.Auth{User: w.user, Pass: w.password}.AsSha512Mechanism()
	case "OAUTHBEARER":
		mech = oauth.Auth{Token: w.token}.AsMechanism()
	default:
		return nil, w, failf("mechanism %s not handled", w.mechanism)
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, w, nil
}

func fgSecRoundTrip(kind string) scenarioFunc {
	return func(c *Ctx) (string, error) {
		opts, w, err := fgSecOpts(c, kind)
		if err != nil {
			return "", err
		}
		t, g := c.secTopic(kind), c.secTopic(kind)+"-g"
		cl, err := fgClient(c, opts...)
		if err != nil {
			return "", err
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		resp, err := adm.CreateTopic(c, 1, 1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return "", fmt.Errorf("create %s through %s: %w", t, w.protocol, err)
		}
		if err := c.WaitFor("topic "+t+" in metadata", func() (bool, error) {
			md, err := adm.Metadata(c, t)
			if err != nil {
				return false, err
			}
			tm, ok := md.Topics[t]
			return ok && tm.Err == nil && len(tm.Partitions) == 1 && tm.Partitions[0].Leader >= 0, nil
		}, nil); err != nil {
			return "", err
		}
		want := secValues(kind)
		var recs []*kgo.Record
		for _, v := range want {
			recs = append(recs, &kgo.Record{Topic: t, Value: []byte(v)})
		}
		if err := cl.ProduceSync(c, recs...).FirstErr(); err != nil {
			return "", fmt.Errorf("produce: %w", err)
		}
		gc, err := fgClient(c, append(opts, kgo.ConsumerGroup(g), kgo.ConsumeTopics(t), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			return "", err
		}
		defer gc.Close()
		var gotv []string
		var ferr error
		if err := c.WaitFor("20 records in group "+g, func() (bool, error) { return len(gotv) >= 20, ferr }, func() {
			pctx, cancel := context.WithTimeout(c, 200*time.Millisecond)
			defer cancel()
			fs := gc.PollFetches(pctx)
			fs.EachError(func(_ string, _ int32, e error) {
				if !errors.Is(e, context.DeadlineExceeded) {
					ferr = e
				}
			})
			gotv = append(gotv, values(fs.Records())...)
		}); err != nil {
			return "", err
		}
		if err := gc.CommitUncommittedOffsets(c); err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
		if !equalStrings(gotv, want) {
			return "", failf("consumed %d records, not the 20 produced in order: %v", len(gotv), gotv)
		}
		gc.Close()
		return w.what + roundTripNote, fgCheckCommitted(c, g, t, 20)
	}
}

// fgCheckCommitted reads the group's offset through the admin listener.
func fgCheckCommitted(c *Ctx, g, t string, want int64) error {
	cl, err := fgClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(c, g)
	if err != nil {
		return err
	}
	o, ok := offs.Lookup(t, 0)
	if !ok || o.Err != nil || o.At != want {
		return failf("group %s committed %+v, want offset %d", g, o, want)
	}
	return nil
}

// fgEndOffset is partition 0's end offset, read through the admin listener.
func fgEndOffset(c *Ctx, t string) (int64, error) {
	cl, err := fgClient(c)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	l, err := kadm.NewClient(cl).ListEndOffsets(c, t)
	if err != nil {
		return 0, err
	}
	o, ok := l.Lookup(t, 0)
	if !ok {
		return 0, failf("no end offset listed for %s", t)
	}
	return o.Offset, o.Err
}

func seenErr(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func fgDeniedProduce(c *Ctx) (string, error) {
	opts, w, err := fgSecOpts(c, "denied")
	if err != nil {
		return "", err
	}
	t := c.deniedName("produce")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	cl, err := fgClient(c, append(opts, kgo.RecordDeliveryTimeout(20*time.Second))...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	perr := cl.ProduceSync(c, &kgo.Record{Topic: t, Value: []byte("must-not-land")}).FirstErr()
	if !errors.Is(perr, kerr.TopicAuthorizationFailed) {
		return "", failf("produce %s: want TOPIC_AUTHORIZATION_FAILED, saw %s", w.what, seenErr(perr))
	}
	end, err := fgEndOffset(c, t)
	if err != nil {
		return "", err
	}
	if end != 0 {
		return "", failf("TOPIC_AUTHORIZATION_FAILED seen, but %s ends at offset %d, want 0 (empty)", t, end)
	}
	return fmt.Sprintf("TOPIC_AUTHORIZATION_FAILED seen (%v); %s still empty (end offset 0)", perr, t), nil
}

// fgPollUntilError polls until a fetch carries an error (not the poll's own deadline) or the
// scenario's time is nearly over (then nil: a timeout is never a pass); records go to *n.
func fgPollUntilError(c *Ctx, cl *kgo.Client, n *int) error {
	for time.Now().Before(c.Until.Add(-2 * time.Second)) {
		pctx, cancel := context.WithTimeout(c, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		*n += len(fs.Records())
		var ferr error
		fs.EachError(func(_ string, _ int32, e error) {
			if ferr == nil && !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) {
				ferr = e
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

func fgDeniedConsume(c *Ctx) (string, error) {
	opts, w, err := fgSecOpts(c, "denied")
	if err != nil {
		return "", err
	}
	t := c.deniedName("consume")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	if err := fgProduce(c, []*kgo.Record{{Topic: t, Value: []byte("admin-record")}}); err != nil {
		return "", err
	}
	cl, err := fgClient(c, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{t: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	n := 0
	ferr := fgPollUntilError(c, cl, &n)
	if n != 0 {
		return "", failf("%d record(s) delivered to %s", n, w.what)
	}
	if !errors.Is(ferr, kerr.TopicAuthorizationFailed) {
		return "", failf("consume by assignment, %s: want TOPIC_AUTHORIZATION_FAILED, saw %s", w.what, seenErr(ferr))
	}
	return fmt.Sprintf("TOPIC_AUTHORIZATION_FAILED seen (%v); no record delivered", ferr), nil
}

func fgDeniedGroup(c *Ctx) (string, error) {
	opts, w, err := fgSecOpts(c, "denied")
	if err != nil {
		return "", err
	}
	t, g := c.secTopic("grp"), c.deniedName("group")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	if err := fgProduce(c, []*kgo.Record{{Topic: t, Value: []byte("admin-record")}}); err != nil {
		return "", err
	}
	cl, err := fgClient(c, append(opts, kgo.ConsumerGroup(g), kgo.ConsumeTopics(t), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	n := 0
	ferr := fgPollUntilError(c, cl, &n)
	if !errors.Is(ferr, kerr.GroupAuthorizationFailed) {
		return "", failf("consume in group %s, %s: want GROUP_AUTHORIZATION_FAILED, saw %s", g, w.what, seenErr(ferr))
	}
	if n != 0 {
		return "", failf("%d record(s) delivered in the denied group", n)
	}
	return fmt.Sprintf("GROUP_AUTHORIZATION_FAILED seen (%v)", ferr), nil
}

func fgDeniedTxn(c *Ctx) (string, error) {
	opts, w, err := fgSecOpts(c, "denied")
	if err != nil {
		return "", err
	}
	id := c.deniedName("txn")
	cl, err := fgTxClient(c, id, opts...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	// ProducerID runs InitProducerId with the transactional id, as a first transaction would.
	_, _, perr := cl.ProducerID(c)
	if !errors.Is(perr, kerr.TransactionalIDAuthorizationFailed) {
		return "", failf("init of transactional id %s, %s: want TRANSACTIONAL_ID_AUTHORIZATION_FAILED, saw %s", id, w.what, seenErr(perr))
	}
	return fmt.Sprintf("TRANSACTIONAL_ID_AUTHORIZATION_FAILED seen (%v)", perr), nil
}

// throttleHook is a kgo.HookBrokerThrottle: the throttles the brokers' answers carried.
type throttleHook struct {
	mu   sync.Mutex
	seen []time.Duration
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, d)
}

// fgQuotaThrottle: the runner set producer_byte_rate for the quota client id; produce 400 KiB
// as alice with it: the hook sees a throttle > 0, every record is acknowledged and the rate
// over the run stays under 3 x the quota.
func fgQuotaThrottle(c *Ctx) (string, error) {
	opts, _, err := fgSecOpts(c, "plain")
	if err != nil {
		return "", err
	}
	s := c.Sec // fgSecOpts checked it is there
	t := c.secTopic("quota")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	hook := &throttleHook{}
	cl, err := fgClient(c, append(opts, kgo.ClientID(s.Quota.ClientIDs["franz-go"]), kgo.WithHooks(hook),
		// 16 KiB uncompressed batches (the Java/librdkafka defaults' size): many Produce
		// requests, so the throttle the first answers carry delays the later ones.
		kgo.ProducerBatchMaxBytes(16384), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(time.Until(c.Until)))...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	const count, size = 400, 1024
	var recs []*kgo.Record
	for i := 0; i < count; i++ {
		recs = append(recs, &kgo.Record{Topic: t, Value: make([]byte, size)})
	}
	start := time.Now()
	if err := cl.ProduceSync(c, recs...).FirstErr(); err != nil {
		return "", fmt.Errorf("produce: %w", err)
	}
	elapsed := time.Since(start).Seconds()
	hook.mu.Lock()
	var peak time.Duration
	for _, d := range hook.seen {
		if d > peak {
			peak = d
		}
	}
	n := len(hook.seen)
	hook.mu.Unlock()
	rate, quota := float64(count*size)/elapsed, s.Quota.ProducerByteRate
	if peak <= 0 {
		return "", failf("no HookBrokerThrottle with a throttle > 0 in %.1f s (%.0f B/s, quota %.0f)", elapsed, rate, quota)
	}
	if rate >= 3*quota {
		return "", failf("%.0f B/s over %.1f s, not under 3 x the quota %.0f", rate, elapsed, quota)
	}
	return fmt.Sprintf("%d x %d B acknowledged in %.1f s (%.0f B/s, quota %.0f); HookBrokerThrottle %d times, max %d ms",
		count, size, elapsed, rate, quota, n, peak.Milliseconds()), nil
}

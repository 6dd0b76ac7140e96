package main

import (
	"context"
	"crypto/sha512"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

func saramaSecurityScenarios() map[string]scenarioFunc {
	return map[string]scenarioFunc{
		"sasl-scram-sha-512": srSecRoundTrip("scram"),
		"sasl-plain":         srSecRoundTrip("plain"),
		"mtls":               srSecRoundTrip("mtls"),
		"sasl-oauthbearer":   srSecRoundTrip("oauthbearer"),
		"acl-denied-produce": srDeniedProduce,
		"acl-denied-consume": srDeniedConsume,
		"acl-denied-group":   srDeniedGroup,
		"acl-denied-txn":     srDeniedTxn,
		"quota-throttle":     srQuotaThrottle,
	}
}

// xdgSCRAM is sarama's SCRAMClient over xdg-go/scram (sarama ships the SASL/SCRAM framing,
// not the SCRAM computation; its own examples use this library).
type xdgSCRAM struct {
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, password, authzID string) error {
	cl, err := scram.HashGeneratorFcn(sha512.New).NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.conv = cl.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

// tokenProvider hands sarama the file's unsecured JWS.
type tokenProvider string

func (t tokenProvider) Token() (*sarama.AccessToken, error) {
	return &sarama.AccessToken{Token: string(t)}, nil
}

// srSecConfig: sarama's config for one way in (Net.TLS, Net.SASL), and the broker to dial.
func srSecConfig(c *Ctx, kind string) (*sarama.Config, secWay, error) {
	w, err := c.way(kind)
	if err != nil {
		return nil, w, err
	}
	cfg := srConfig()
	if w.tls() {
		tc, err := c.tlsConfig(w)
		if err != nil {
			return nil, w, err
		}
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tc
	}
	if w.mechanism != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Handshake = true
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
		switch w.mechanism {
		case "PLAIN":
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			cfg.Net.SASL.User, cfg.Net.SASL.Password = w.user, w.password
		case "SCRAM-SHA-512":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.User, cfg.Net.SASL.Password = w.user, w.password
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{} }
		case "OAUTHBEARER":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeOAuth
			cfg.Net.SASL.TokenProvider = tokenProvider(w.token)
		default:
			return nil, w, failf("mechanism %s not handled", w.mechanism)
		}
	}
	return cfg, w, nil
}

func srSecRoundTrip(kind string) scenarioFunc {
	return func(c *Ctx) (string, error) {
		cfg, w, err := srSecConfig(c, kind)
		if err != nil {
			return "", err
		}
		brokers := []string{w.listener}
		t, g := c.secTopic(kind), c.secTopic(kind)+"-g"
		adm, err := sarama.NewClusterAdmin(brokers, cfg)
		if err != nil {
			return "", fmt.Errorf("admin through %s: %w", w.protocol, err)
		}
		defer adm.Close()
		if err := adm.CreateTopic(t, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
			return "", fmt.Errorf("create %s through %s: %w", t, w.protocol, err)
		}
		if err := c.WaitFor("topic "+t+" in metadata", func() (bool, error) {
			md, err := adm.DescribeTopics([]string{t})
			if err != nil {
				return false, err
			}
			return len(md) == 1 && md[0].Err == sarama.ErrNoError && len(md[0].Partitions) == 1 && md[0].Partitions[0].Leader >= 0, nil
		}, nil); err != nil {
			return "", err
		}
		want := secValues(kind)
		var msgs []*sarama.ProducerMessage
		for _, v := range want {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Value: sarama.StringEncoder(v)})
		}
		p, err := sarama.NewSyncProducer(brokers, cfg)
		if err != nil {
			return "", err
		}
		err = p.SendMessages(msgs)
		p.Close()
		if err != nil {
			return "", fmt.Errorf("produce: %w", err)
		}
		gcfg, _, _ := srSecConfig(c, kind)
		m, err := newSrMemberWith(c, brokers, gcfg, g, t)
		if err != nil {
			return "", err
		}
		if err := c.WaitFor("20 records in group "+g, func() (bool, error) { return m.count() >= 20, nil }, nil); err != nil {
			m.close()
			return "", err
		}
		err = m.commit()
		m.close() // its Cleanup commits too, before the member leaves
		if err != nil {
			return "", err
		}
		m.mu.Lock()
		gotv := svalues(m.recs)
		m.mu.Unlock()
		if !equalStrings(gotv, want) {
			return "", failf("consumed %d records, not the 20 produced in order: %v", len(gotv), gotv)
		}
		return w.what + roundTripNote, srCheckCommitted(g, t, 20, c)
	}
}

func srCheckCommitted(g, t string, want int64, c *Ctx) error {
	adm, err := sarama.NewClusterAdmin([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return err
	}
	defer adm.Close()
	resp, err := adm.ListConsumerGroupOffsets(g, map[string][]int32{t: {0}})
	if err != nil {
		return err
	}
	if b := resp.GetBlock(t, 0); b == nil || b.Offset != want {
		return failf("group %s committed %+v, want offset %d", g, b, want)
	}
	return nil
}

func srEndOffset(c *Ctx, t string) (int64, error) {
	cl, err := sarama.NewClient([]string{c.Bootstrap}, srConfig())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	return cl.GetOffset(t, 0, sarama.OffsetNewest)
}

func srDeniedProduce(c *Ctx) (string, error) {
	cfg, w, err := srSecConfig(c, "denied")
	if err != nil {
		return "", err
	}
	t := c.deniedName("produce")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	cfg.Producer.Retry.Max = 2
	p, err := sarama.NewSyncProducer([]string{w.listener}, cfg)
	if err != nil {
		return "", fmt.Errorf("producer as %s: %w", w.what, err)
	}
	_, _, perr := p.SendMessage(&sarama.ProducerMessage{Topic: t, Value: sarama.StringEncoder("must-not-land")})
	p.Close()
	if !errors.Is(perr, sarama.ErrTopicAuthorizationFailed) {
		return "", failf("produce, %s: want ErrTopicAuthorizationFailed, saw %s", w.what, seenErr(perr))
	}
	end, err := srEndOffset(c, t)
	if err != nil {
		return "", err
	}
	if end != 0 {
		return "", failf("ErrTopicAuthorizationFailed seen, but %s ends at offset %d, want 0 (empty)", t, end)
	}
	return fmt.Sprintf("ErrTopicAuthorizationFailed seen (%v); %s still empty (end offset 0)", perr, t), nil
}

func srDeniedConsume(c *Ctx) (string, error) {
	cfg, w, err := srSecConfig(c, "denied")
	if err != nil {
		return "", err
	}
	t := c.deniedName("consume")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	if err := srProduce(c, []*sarama.ProducerMessage{{Topic: t, Value: sarama.StringEncoder("admin-record")}}, nil); err != nil {
		return "", err
	}
	cons, err := sarama.NewConsumer([]string{w.listener}, cfg)
	if err != nil {
		return "", fmt.Errorf("consumer as %s: %w", w.what, err)
	}
	defer cons.Close()
	n := 0
	pc, cerr := cons.ConsumePartition(t, 0, sarama.OffsetOldest)
	if cerr == nil {
		// Assigned: an error must come through Errors(), not a record through Messages().
		defer pc.AsyncClose()
		timer := time.NewTimer(time.Until(c.Until.Add(-2 * time.Second)))
		defer timer.Stop()
	loop:
		for {
			select {
			case <-pc.Messages():
				n++
			case e := <-pc.Errors():
				cerr = e
				break loop
			case <-timer.C:
				break loop
			}
		}
	}
	if n != 0 {
		return "", failf("%d record(s) delivered to %s", n, w.what)
	}
	if !errors.Is(cerr, sarama.ErrTopicAuthorizationFailed) {
		return "", failf("consume by assignment, %s: want ErrTopicAuthorizationFailed, saw %s", w.what, seenErr(cerr))
	}
	return fmt.Sprintf("ErrTopicAuthorizationFailed seen (%v); no record delivered", cerr), nil
}

func srDeniedGroup(c *Ctx) (string, error) {
	cfg, w, err := srSecConfig(c, "denied")
	if err != nil {
		return "", err
	}
	t, g := c.secTopic("grp"), c.deniedName("group")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	if err := srProduce(c, []*sarama.ProducerMessage{{Topic: t, Value: sarama.StringEncoder("admin-record")}}, nil); err != nil {
		return "", err
	}
	grp, err := sarama.NewConsumerGroup([]string{w.listener}, g, cfg)
	if err != nil {
		return "", fmt.Errorf("consumer group as %s: %w", w.what, err)
	}
	defer grp.Close()
	h := &srMember{own: map[int32]bool{}}
	ctx, cancel := context.WithDeadline(c, c.Until.Add(-2*time.Second))
	defer cancel()
	var gerr error
	for ctx.Err() == nil {
		// Consume returns the join's error (sarama retries only the retriable ones itself).
		if gerr = grp.Consume(ctx, []string{t}, h); gerr != nil {
			break
		}
	}
	if !errors.Is(gerr, sarama.ErrGroupAuthorizationFailed) {
		return "", failf("consume in group %s, %s: want ErrGroupAuthorizationFailed, saw %s", g, w.what, seenErr(gerr))
	}
	if n := h.count(); n != 0 {
		return "", failf("%d record(s) delivered in the denied group", n)
	}
	return fmt.Sprintf("ErrGroupAuthorizationFailed seen (%v)", gerr), nil
}

func srDeniedTxn(c *Ctx) (string, error) {
	cfg, w, err := srSecConfig(c, "denied")
	if err != nil {
		return "", err
	}
	id := c.deniedName("txn")
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Transaction.Timeout = 60 * time.Second
	cfg.Producer.Transaction.Retry.Max = 2
	cfg.Net.MaxOpenRequests = 1
	// sarama (1.37+) runs InitProducerId with the transactional id when the producer is made.
	p, perr := sarama.NewSyncProducer([]string{w.listener}, cfg)
	if perr == nil {
		p.Close()
	}
	// sarama's transaction manager wraps the broker's error in its own text.
	if !errors.Is(perr, sarama.ErrTransactionalIDAuthorizationFailed) &&
		!(perr != nil && strings.Contains(perr.Error(), sarama.ErrTransactionalIDAuthorizationFailed.Error())) {
		return "", failf("init of transactional id %s, %s: want ErrTransactionalIDAuthorizationFailed, saw %s", id, w.what,
			map[bool]string{true: "the producer was made", false: seenErr(perr)}[perr == nil])
	}
	return fmt.Sprintf("ErrTransactionalIDAuthorizationFailed seen (%v)", perr), nil
}

// srQuotaThrottle: the runner set producer_byte_rate for the quota client id; produce 400 KiB
// as alice with it through a SyncProducer: sarama's own metric throttle-time-in-ms (a
// histogram per broker in Config.MetricRegistry) must have a maximum > 0, every message is
// acknowledged and the rate over the run stays under 3 x the quota.
func srQuotaThrottle(c *Ctx) (string, error) {
	cfg, w, err := srSecConfig(c, "plain")
	if err != nil {
		return "", err
	}
	cfg.ClientID = c.Sec.Quota.ClientIDs["sarama"]
	cfg.Producer.Timeout = time.Until(c.Until)
	// 16 KiB requests (the Java/librdkafka batch size): many Produce requests, so the throttle
	// the first answers carry delays the later ones.
	cfg.Producer.MaxMessageBytes, cfg.Producer.Flush.Bytes = 16384, 16384
	t := c.secTopic("quota")
	if err := srCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	p, err := sarama.NewSyncProducer([]string{w.listener}, cfg)
	if err != nil {
		return "", err
	}
	defer p.Close()
	const count, size = 400, 1024
	var msgs []*sarama.ProducerMessage
	for i := 0; i < count; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: t, Value: sarama.ByteEncoder(make([]byte, size))})
	}
	start := time.Now()
	if err := p.SendMessages(msgs); err != nil {
		return "", fmt.Errorf("produce: %w", err)
	}
	elapsed := time.Since(start).Seconds()
	var peak int64
	cfg.MetricRegistry.Each(func(name string, m interface{}) {
		if h, ok := m.(interface{ Max() int64 }); ok && strings.HasPrefix(name, "throttle-time-in-ms-for-broker-") && h.Max() > peak {
			peak = h.Max()
		}
	})
	rate, quota := float64(count*size)/elapsed, c.Sec.Quota.ProducerByteRate
	if peak <= 0 {
		return "", failf("metric throttle-time-in-ms max 0 after %.1f s (%.0f B/s, quota %.0f)", elapsed, rate, quota)
	}
	if rate >= 3*quota {
		return "", failf("%.0f B/s over %.1f s, not under 3 x the quota %.0f", rate, elapsed, quota)
	}
	return fmt.Sprintf("%d x %d B acknowledged in %.1f s (%.0f B/s, quota %.0f); metric throttle-time-in-ms max %d ms",
		count, size, elapsed, rate, quota, peak), nil
}

// franz-go's share-group consumer (KIP-932, kgo.ShareGroup, franz-go 1.22): the
// share-group-split scenario of compat_tests/scenarios.py. kgo accepts every record of a poll
// when the next poll starts (implicit acknowledgement), as the Java and librdkafka rows do.

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fgShareGroupSplit: three share consumers of one group on a 1-partition topic; 300 records,
// each delivered to exactly one of them, none redelivered within 1.5 s after.
func fgShareGroupSplit(c *Ctx) (string, error) {
	t := c.Topic("")
	if err := fgCreate(c, t, 1, nil); err != nil {
		return "", err
	}
	g := c.Group()
	members := make([]*kgo.Client, 3)
	for i := range members {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap), kgo.ConsumeTopics(t), kgo.ShareGroup(g),
			kgo.ShareMaxRecords(20), kgo.ShareMaxRecordsStrict())
		if err != nil {
			return "", err
		}
		defer cl.Close()
		members[i] = cl
	}
	got := make([]map[string]int, len(members))
	for i := range got {
		got[i] = map[string]int{}
	}
	pollAll := func() {
		for i, cl := range members {
			ctx, cancel := context.WithTimeout(c, 100*time.Millisecond)
			fetches := cl.PollFetches(ctx)
			cancel()
			fetches.EachRecord(func(r *kgo.Record) { got[i][string(r.Value)]++ })
		}
	}
	count := func(prefix string) int {
		n := 0
		for _, m := range got {
			for v, k := range m {
				if strings.HasPrefix(v, prefix) {
					n += k
				}
			}
		}
		return n
	}
	// share.auto.offset.reset is latest: probe records until the group delivers one, so the
	// real records come after the share-partition's start offset.
	probe := 0
	if err := c.WaitFor("the share group delivers a probe record", func() (bool, error) {
		return count("probe-") > 0, nil
	}, func() {
		_ = fgProduceTo(c, []*kgo.Record{{Topic: t, Partition: 0, Value: []byte(fmt.Sprintf("probe-%d", probe))}})
		probe++
		pollAll()
	}); err != nil {
		return "", err
	}
	const total = 300
	recs := make([]*kgo.Record, total)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: t, Partition: 0, Value: []byte(fmt.Sprintf("r-%d", i))}
	}
	if err := fgProduceTo(c, recs); err != nil {
		return "", err
	}
	if err := c.WaitFor(fmt.Sprintf("%d records delivered", total), func() (bool, error) {
		return count("r-") >= total, nil
	}, pollAll); err != nil {
		return "", err
	}
	for settle := time.Now().Add(1500 * time.Millisecond); time.Now().Before(settle); {
		pollAll() // a redelivery would show up now
	}
	union := map[string]int{}
	split := make([]int, len(members))
	for i, m := range got {
		for v, k := range m {
			if strings.HasPrefix(v, "r-") {
				union[v] += k
				split[i] += k
			}
		}
	}
	var twice []string
	for v, k := range union {
		if k > 1 {
			twice = append(twice, v)
		}
	}
	if len(twice) > 0 {
		return "", fmt.Errorf("delivered more than once: %d records, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if len(union) != total {
		return "", fmt.Errorf("got %d distinct records of %d", len(union), total)
	}
	return fmt.Sprintf("%d records, each delivered once, split %v over 3 share consumers", total, split), nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/harness"
)

const brokers = 4

// cluster is the four brokers (rack-1 … rack-4, founders of one cluster) and an admin
// client that knows all of them.
type cluster struct {
	bs       []*harness.Broker
	client   *kgo.Client
	adm      *kadm.Client
	stopErrs []error
	stopped  bool
}

func (c *cluster) bootstrap() string {
	addrs := make([]string, len(c.bs))
	for i, b := range c.bs {
		addrs[i] = b.KafkaAddr
	}
	return strings.Join(addrs, ",")
}

// startCluster starts four founding brokers on free loopback ports with their data under
// o.dataDir and waits until each lists all four.
func startCluster(ctx context.Context, o options) (*cluster, error) {
	addrs, seeds, err := harness.ClusterAddrs(brokers)
	if err != nil {
		return nil, err
	}
	bs := make([]*harness.Broker, brokers)
	for i := range bs {
		bs[i] = newBroker(o, i+1, seeds)
		bs[i].KafkaAddr, bs[i].AdminAddr, bs[i].RPCAddr = addrs[i][0], addrs[i][1], addrs[i][2]
	}
	return launch(ctx, bs)
}

func newBroker(o options, id int, seeds []string) *harness.Broker {
	own := []string{"--seeds", strings.Join(seeds, ","), "--rack", fmt.Sprintf("rack-%d", id)}
	return harness.New(harness.Options{
		ID: id, Binary: o.binary,
		DataDir: filepath.Join(o.dataDir, fmt.Sprintf("node-%d", id)),
		LogPath: filepath.Join(o.logDir, fmt.Sprintf("broker-%d.log", id)),
		Args:    own,
		Logf:    logf,
	})
}

func launch(ctx context.Context, bs []*harness.Broker) (*cluster, error) {
	c := &cluster{bs: bs}
	errs := harness.Together(bs, func(b *harness.Broker) error { return b.LaunchOnFixedPorts(ctx) })
	if err := errors.Join(errs...); err != nil {
		c.stop()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := harness.WaitListed(wctx, brokers, bs...); err != nil {
		c.stop()
		return nil, err
	}
	var err error
	c.client, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(c.bootstrap(), ",")...), kgo.ClientID("cairn-benchmove"))
	if err != nil {
		c.stop()
		return nil, err
	}
	c.adm = kadm.NewClient(c.client)
	return c, nil
}

// stop stops every broker gracefully, once; stopErrs keeps what went wrong.
func (c *cluster) stop() {
	if c.stopped {
		return
	}
	c.stopped = true
	if c.client != nil {
		c.client.Close()
	}
	for _, err := range harness.StopAll(c.bs...) {
		if err != nil {
			c.stopErrs = append(c.stopErrs, err)
		}
	}
}

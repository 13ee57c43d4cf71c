package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The two ways the move fault talks to the cluster: Kafka's reassignment APIs (45, 46) and
// ElectLeaders (43) through kadm, and the admin HTTP endpoints of issue 14. Each call ends
// in one of three answers, which the fault log and the summary count apart: accepted, a
// refusal the cluster gave a reason for, or no answer (the request failed on the way, or
// the cluster could not decide in time), after which the change may or may not have been
// recorded.

// answer is the cluster's answer to one change request.
type answer int

const (
	accepted   answer = iota
	refused           // the cluster said no, with a reason
	unanswered        // no verdict: the change may or may not have been recorded
)

func (a answer) String() string {
	return [...]string{"accepted", "refused", "no answer"}[a]
}

// verdict is an answer and what the cluster (or the transport) said.
type verdict struct {
	answer answer
	reason string
}

func (v verdict) String() string {
	if v.reason == "" {
		return v.answer.String()
	}
	return v.answer.String() + ": " + v.reason
}

// via names the interface a request went through.
type via string

const (
	viaKafka via = "kadm"
	viaHTTP  via = "http"
)

// adminError is the body of an admin API error answer.
type adminError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// reconfiguration is one entry of GET /v1/partitions/reconfigurations.
type reconfiguration struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Original  []int32 `json:"original"`
	Target    []int32 `json:"target"`
	Cancelled bool    `json:"cancelled"`
	Final     bool    `json:"final"`
	Phase     string  `json:"phase"`
}

// adminCall is one admin HTTP request to the broker at addr (host:port). A 2xx is accepted
// and a 4xx a refusal. A 5xx and a transport error are no answer: the contract answers 503
// when no controller leader applied the change in time, and it may still be applied. A
// 4xx/5xx body's message is the reason.
func adminCall(ctx context.Context, hc *http.Client, method, addr, path string, body any, out any) verdict {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return verdict{unanswered, err.Error()}
		}
		rd = strings.NewReader(string(raw))
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return verdict{unanswered, err.Error()}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return verdict{unanswered, err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 {
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				return verdict{unanswered, fmt.Sprintf("%s %s: HTTP %d with a body that is not the contract's: %v", method, path, resp.StatusCode, err)}
			}
		}
		return verdict{accepted, ""}
	}
	var e adminError
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	reason := fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
	if resp.StatusCode/100 == 4 {
		return verdict{refused, reason}
	}
	return verdict{unanswered, reason}
}

func partitionPath(topic string, p int32) string {
	return "/v1/partitions/" + url.PathEscape(topic) + "/" + strconv.Itoa(int(p))
}

// httpMove asks the broker at addr to move topic/p to target.
func httpMove(ctx context.Context, hc *http.Client, addr, topic string, p int32, target []int32) verdict {
	return adminCall(ctx, hc, http.MethodPost, addr, partitionPath(topic, p)+"/replicas", target, nil)
}

// httpCancel asks the broker at addr to cancel topic/p's move.
func httpCancel(ctx context.Context, hc *http.Client, addr, topic string, p int32) verdict {
	return adminCall(ctx, hc, http.MethodPost, addr, partitionPath(topic, p)+"/cancel_reconfiguration", nil, nil)
}

// httpTransfer asks the broker at addr to hand topic/p's leadership to target.
func httpTransfer(ctx context.Context, hc *http.Client, addr, topic string, p, target int32) verdict {
	return adminCall(ctx, hc, http.MethodPost, addr, fmt.Sprintf("%s/transfer_leadership?target=%d", partitionPath(topic, p), target), nil, nil)
}

// httpReconfigurations lists the moves under way as the broker at addr knows them.
func httpReconfigurations(ctx context.Context, hc *http.Client, addr string) ([]reconfiguration, verdict) {
	var out []reconfiguration
	v := adminCall(ctx, hc, http.MethodGet, addr, "/v1/partitions/reconfigurations", nil, &out)
	return out, v
}

// kafkaVerdict turns a request error and a per-partition error into a verdict: a Kafka
// error code is the cluster's refusal, except the ones that leave the outcome open (the
// request timed out, or a controller or leader was being elected).
func kafkaVerdict(reqErr, err error, msg string) verdict {
	if reqErr != nil {
		return verdict{unanswered, reqErr.Error()}
	}
	if err == nil {
		return verdict{accepted, ""}
	}
	reason := err.Error()
	if msg != "" {
		reason += ": " + msg
	}
	if errors.Is(err, kerr.RequestTimedOut) {
		return verdict{unanswered, reason}
	}
	return verdict{refused, reason}
}

// kafkaMove moves topic/p to target through AlterPartitionReassignments; target nil
// cancels its move.
func kafkaMove(ctx context.Context, adm *kadm.Client, topic string, p int32, target []int32) verdict {
	var req kadm.AlterPartitionAssignmentsReq
	if target == nil {
		req.CancelAssign(topic, p)
	} else {
		req.Assign(topic, p, target)
	}
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return kafkaVerdict(err, nil, "")
	}
	r, ok := resp[topic][p]
	if !ok {
		return verdict{unanswered, "the answer does not name the partition"}
	}
	return kafkaVerdict(nil, r.Err, r.ErrMessage)
}

// kafkaElectPreferred asks for a preferred leader election of topic/p. ELECTION_NOT_NEEDED
// (the preferred replica leads already) counts as accepted.
func kafkaElectPreferred(ctx context.Context, adm *kadm.Client, topic string, p int32) verdict {
	resp, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {p: {}}})
	if err != nil {
		return kafkaVerdict(err, nil, "")
	}
	r, ok := resp[topic][p]
	if !ok {
		return verdict{unanswered, "the answer does not name the partition"}
	}
	if errors.Is(r.Err, kerr.ElectionNotNeeded) {
		return verdict{accepted, "the preferred replica leads already"}
	}
	return kafkaVerdict(nil, r.Err, r.ErrMessage)
}

// kafkaMoving reports whether topic/p has a move listed by ListPartitionReassignments.
func kafkaMoving(ctx context.Context, adm *kadm.Client, topic string, p int32) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {p: {}}})
	if err != nil {
		return false, err
	}
	_, ok := resp[topic][p]
	return ok, nil
}

// kafkaMovingAll returns the partitions of topic with a move listed.
func kafkaMovingAll(ctx context.Context, adm *kadm.Client, topic string, partitions int) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	set := kadm.TopicsSet{topic: {}}
	for p := range partitions {
		set[topic][int32(p)] = struct{}{}
	}
	resp, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, err
	}
	var out []int32
	for p := range resp[topic] {
		out = append(out, p)
	}
	return out, nil
}

// replicasOf returns topic/p's replicas and leader as Metadata reports them.
func replicasOf(ctx context.Context, adm *kadm.Client, topic string, p int32) ([]int32, int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, -1, err
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		return nil, -1, fmt.Errorf("metadata of %s: %v", topic, td.Err)
	}
	pd, ok := td.Partitions[p]
	if !ok {
		return nil, -1, fmt.Errorf("metadata of %s lists no partition %d", topic, p)
	}
	if pd.Err != nil && !errors.Is(pd.Err, kerr.LeaderNotAvailable) && !errors.Is(pd.Err, kerr.ReplicaNotAvailable) {
		return nil, -1, fmt.Errorf("metadata of %s/%d: %v", topic, p, pd.Err)
	}
	return pd.Replicas, pd.Leader, nil
}

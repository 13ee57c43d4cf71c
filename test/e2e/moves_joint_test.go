package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The cancel points of a move around its joint configuration (DESIGN.md §8,
// docs/operations.md "The steps of a move"). A move leaves the joint configuration within
// one driver round of entering it, so these tests start every broker with the hidden test
// gate --test-hold-moves (internal/broker/moves_gate.go), whose file holds each move in
// the joint configuration: before its leader records that it leaves ("joint": a cancel is
// accepted) or just after ("final": a cancel is refused). Each test waits until the group is
// in the joint configuration, acts, then releases the gate or lets the cancel through it.

// holdMoves writes what the gate file says (joint, final, or "" for no hold) by rename,
// so that a driver reading it never sees half of it.
func holdMoves(t *testing.T, path, what string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(what), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// heldCluster starts n brokers sharing one move gate file, holding nothing yet, and
// returns them with the file's path.
func heldCluster(t *testing.T, n int) ([]*Broker, string) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "hold-moves")
	holdMoves(t, gate, "")
	return startCluster(t, n, "--test-hold-moves", gate), gate
}

// phasedReconfiguration is an entry of GET /v1/partitions/reconfigurations with the
// phase its driver reports.
type phasedReconfiguration struct {
	reconfiguration
	Phase string `json:"phase"`
}

func phasedReconfigurations(t *testing.T, b *Broker) []phasedReconfiguration {
	t.Helper()
	var out []phasedReconfiguration
	getAdminJSON(t, b, "/v1/partitions/reconfigurations", &out)
	return out
}

// waitHeld waits until topic's partition 0 is in its joint configuration, held there by
// the gate at hold: its leader counts the voters of both halves in its ISR (isr of them:
// a learner is never in it, so only the joint configuration makes the ISR larger than
// either replica set), logged that the gate holds it (the phase alone is also reported on
// the way in, and while a leaving leader hands its leadership over), and lists the move
// not cancelled, in phase joint before the controller records it final, leaving after.
func waitHeld(t *testing.T, bs []*Broker, topic, hold string, isr int) {
	t.Helper()
	phase, final := "joint", false
	if hold == "final" {
		phase, final = "leaving", true
	}
	logged := fmt.Sprintf("held in the joint configuration by the test gate --test-hold-moves=%s\" topic=%s ", hold, topic)
	var last string
	held := false
	defer func() {
		if !held {
			t.Logf("%s/0 never held in its joint configuration (last: %s)", topic, last)
		}
	}()
	waitFor(t, 30*time.Second, func() bool {
		for i, b := range bs {
			st, ok := adminPartition(b, topic, 0)
			if !ok || !st.IsLeader {
				continue
			}
			last = fmt.Sprintf("leader %d: isr %v", i+1, st.ISR)
			if !b.LogContains(logged) {
				last += ", not held yet"
				return false
			}
			var rc *phasedReconfiguration
			for _, r := range phasedReconfigurations(t, b) {
				if r.Topic == topic && r.Partition == 0 {
					rc = &r
				}
			}
			if rc == nil {
				last += ", no move listed"
				return false
			}
			last += fmt.Sprintf(", move %+v", *rc)
			held = len(st.ISR) == isr && rc.Phase == phase && rc.Final == final && !rc.Cancelled
			return held
		}
		return false
	})
	t.Logf("%s/0 held in its joint configuration: %s", topic, last)
}

// checkWrittenOnce asserts that no produced value was stored at two offsets: the
// idempotent producer's retries across the move's leader changes wrote each record once.
func checkWrittenOnce(t *testing.T, got []*kgo.Record) {
	t.Helper()
	at := map[string]int64{}
	for _, r := range got {
		if prev, dup := at[string(r.Value)]; dup && prev != r.Offset {
			t.Errorf("record %q stored twice, at offsets %d and %d", r.Value, prev, r.Offset)
		}
		at[string(r.Value)] = r.Offset
	}
}

// TestMoveCancelledInTheJointConfiguration: a move of 1,2,3 under an idempotent acks=all
// load is held in its joint configuration (old and new replicas voting) and cancelled
// there; the group goes forward out of it and back through another joint configuration to
// 1,2,3, the brokers the move had added delete their replicas, and every acknowledged
// record is read back at its offset, once. To 2,3,4 the leader (1) hands its leadership to
// a replica in both halves; to 4,5,6 to a new replica, which must hand it back to one of
// 1,2,3 on the way back.
func TestMoveCancelledInTheJointConfiguration(t *testing.T) {
	for _, c := range []struct {
		name    string
		brokers int
		target  []int32
	}{
		{"one replica replaced", 4, []int32{2, 3, 4}},
		{"every replica replaced", 6, []int32{4, 5, 6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs, gate := heldCluster(t, c.brokers)
			adm, load := loadedPartition(t, bs[0], "mvj", 1000)

			holdMoves(t, gate, "joint")
			moveTo(t, adm, "mvj", c.target)
			waitHeld(t, bs, "mvj", "joint", c.brokers)
			n := load.log.count()
			waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+200 }) // writes go on in joint
			cancelMove(t, adm, "mvj")
			// The gate still says joint: a cancelled move is not held, so it needs no release.
			original := []int32{1, 2, 3}
			waitMoved(t, adm, "mvj", original, 60*time.Second)
			for _, id := range c.target {
				if !slices.Contains(original, id) {
					replicaGone(t, bs[id-1], "mvj")
				}
			}
			n = load.log.count()
			waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+200 }) // and after the cancel
			acked := load.stop()

			got := consumeAll(t, bs[1], "mvj", 1, len(acked))
			checkAckedReadable(t, acked, got)
			checkWrittenOnce(t, got)
		})
	}
}

// TestMoveCancelRefusedOnceLeavingTheJointConfiguration: once the leader has recorded that
// the move leaves its joint configuration, a cancel, through Kafka's API, the admin API or
// the CLI, is refused with the documented reason, although the group is still in the joint
// configuration (held there after the record); released, the move finishes on its target.
func TestMoveCancelRefusedOnceLeavingTheJointConfiguration(t *testing.T) {
	bs, gate := heldCluster(t, 4)
	adm, load := loadedPartition(t, bs[0], "mvf", 1000)

	holdMoves(t, gate, "final")
	moveTo(t, adm, "mvf", []int32{2, 3, 4})
	waitHeld(t, bs, "mvf", "final", 4)

	const why = "the partition is leaving its joint configuration; cancelling is no longer safe"
	var req kadm.AlterPartitionAssignmentsReq
	req.CancelAssign("mvf", 0)
	resps, err := adm.AlterPartitionAssignments(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("cancelling: %v", err)
	}
	if r := resps["mvf"][0]; !errors.Is(r.Err, kerr.ReassignmentInProgress) || !strings.Contains(r.ErrMessage, why) {
		t.Fatalf("a cancel after the leaving record: %v %q, want REASSIGNMENT_IN_PROGRESS %q", r.Err, r.ErrMessage, why)
	}
	code, body := adminRequest(t, bs[2], "POST", "/v1/partitions/mvf/0/cancel_reconfiguration", "")
	if code != 409 || !strings.Contains(body, why) {
		t.Fatalf("admin cancel after the leaving record: %d %s, want 409 %q", code, body, why)
	}
	if r, code := clusterCLI(t, bs[3], "partitions", "move-cancel", "mvf/0"); code == 0 || !strings.Contains(r.Stderr+r.Stdout, why) {
		t.Fatalf("cairn cluster partitions move-cancel after the leaving record: exit %d\n%s", code, r)
	}
	// Refused means nothing changed: still held in the joint configuration, not cancelled.
	waitHeld(t, bs, "mvf", "final", 4)

	holdMoves(t, gate, "")
	waitMoved(t, adm, "mvf", []int32{2, 3, 4}, 60*time.Second)
	replicaGone(t, bs[0], "mvf")
	n := load.log.count()
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+200 })
	acked := load.stop()

	got := consumeAll(t, bs[1], "mvf", 1, len(acked))
	checkAckedReadable(t, acked, got)
	checkWrittenOnce(t, got)
}

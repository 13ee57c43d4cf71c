package kafka

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

func scramAdmin(t *testing.T) (*kadm.Client, *kgo.Client, interface {
	ScramCredential(string, string) (security.ScramCredential, bool)
}) {
	t.Helper()
	addr, b := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl), cl, b
}

// kadm creates, rotates, describes and deletes users; what the broker stores is the
// credential the password derives, so a SCRAM exchange with the password would succeed.
func TestScramUsersThroughKadm(t *testing.T) {
	adm, _, store := scramAdmin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	salt := []byte("0123456789abcdef")
	salted, _ := pbkdf2.Key(sha256.New, "pw1", salt, 4096, 32)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Salt: salt, SaltedPassword: salted},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "pw2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v %s", r.User, r.Err, r.ErrMessage)
		}
	}
	want, _ := security.DeriveScramCredential(security.ScramSHA256, "alice", "pw1", 4096, salt)
	got, ok := store.ScramCredential("alice", security.ScramSHA256)
	if !ok || string(got.StoredKey) != string(want.StoredKey) || string(got.ServerKey) != string(want.ServerKey) {
		t.Fatalf("stored %+v, want %+v", got, want)
	}

	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all["bob"].CredInfos[0] != (kadm.CredInfo{Mechanism: kadm.ScramSha512, Iterations: 8192}) ||
		all["alice"].CredInfos[0] != (kadm.CredInfo{Mechanism: kadm.ScramSha256, Iterations: 4096}) {
		t.Fatalf("described %+v", all)
	}
	one, err := adm.DescribeUserSCRAMs(ctx, "alice", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if one["alice"].Err != nil || !kerrIs(one["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("described %+v", one)
	}

	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}, {User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res["alice"].Err != nil || !kerrIs(res["carol"].Err, kerr.ResourceNotFound) {
		t.Fatalf("deleted %+v", res)
	}
	if _, ok := store.ScramCredential("alice", security.ScramSHA256); ok {
		t.Fatal("deleted credential still served")
	}
}

func kerrIs(err error, want *kerr.Error) bool { return err == want }

// Each kind of bad alteration gets Kafka's code for its user, changes nothing for it, and
// does not stop a good user in the same request.
func TestAlterUserScramRefusesBadInput(t *testing.T) {
	adm, cl, store := scramAdmin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	good := make([]byte, 32)
	up := func(name string, mech int8, iters int32, salt, sp []byte) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iters, salt, sp
		return u
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("ok", 1, 4096, []byte("s"), good),
		up("mech", 3, 4096, []byte("s"), good),
		up("few", 1, 1024, []byte("s"), good),
		up("many", 1, 20000, []byte("s"), good),
		up("nosalt", 1, 4096, nil, good),
		up("shortpw", 1, 4096, []byte("s"), good[:8]),
		up("", 1, 4096, []byte("s"), good),
		up("twice", 1, 4096, []byte("s"), good),
		up("twice", 2, 4096, []byte("s"), make([]byte, 64)),
		up("both", 1, 4096, []byte("s"), good),
	}
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "both", 1
	d2 := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d2.Name, d2.Mechanism = "delmech", 0
	req.Deletions = append(req.Deletions, d, d2)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{
		"ok": nil, "mech": kerr.UnsupportedSaslMechanism, "few": kerr.UnacceptableCredential, "many": kerr.UnacceptableCredential,
		"nosalt": kerr.UnacceptableCredential, "shortpw": kerr.UnacceptableCredential, "": kerr.UnacceptableCredential,
		"twice": kerr.DuplicateResource, "both": kerr.DuplicateResource, "delmech": kerr.UnsupportedSaslMechanism,
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results, want one per user (%d): %+v", len(resp.Results), len(want), resp.Results)
	}
	for _, r := range resp.Results {
		w, ok := want[r.User]
		if !ok || kerr.ErrorForCode(r.ErrorCode) != func() error {
			if w == nil {
				return nil
			}
			return w
		}() {
			t.Errorf("user %q: %v (%v), want %v", r.User, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, w)
		}
		if r.ErrorCode != 0 && r.ErrorMessage == nil {
			t.Errorf("user %q refused without a message", r.User)
		}
	}
	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all["ok"].User != "ok" {
		t.Fatalf("stored users %+v, want only ok", all)
	}
	if _, ok := store.ScramCredential("twice", security.ScramSHA256); ok {
		t.Fatal("a duplicated user was stored")
	}

	// Describe: a user named twice is DUPLICATE_RESOURCE, answered once.
	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"ok", "ok"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		dreq.Users = append(dreq.Users, u)
	}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Results) != 1 || dresp.Results[0].ErrorCode != kerr.DuplicateResource.Code || len(dresp.Results[0].CredentialInfos) != 0 {
		t.Fatalf("describe twice: %+v", dresp.Results)
	}
}

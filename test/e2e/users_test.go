package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestScramUsersReplicated: on three brokers, kadm creates a user through broker 1; broker
// 3 describes it (the credential is controller state, replicated), and the admin API of
// broker 2 lists it without keys; kadm deletes it through broker 2 and broker 1 no longer
// describes it. Bad alterations get Kafka's codes and store nothing; the CLI lists users.
func TestScramUsersReplicated(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	ctx := ctxFor(t, 60*time.Second)
	res, err := bs[0].Admin(t).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "s3cret"},
		{User: "few", Mechanism: kadm.ScramSha256, Iterations: 4096, Salt: []byte("s"), SaltedPassword: make([]byte, 31)},
		{User: "twice", Mechanism: kadm.ScramSha256, Password: "p"},
		{User: "twice", Mechanism: kadm.ScramSha512, Password: "p"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res["alice"].Err != nil || res["few"].Err != kerr.UnacceptableCredential || res["twice"].Err != kerr.DuplicateResource {
		t.Fatalf("alter results %+v", res)
	}
	adm3 := bs[2].Admin(t)
	var described kadm.DescribedUserSCRAMs
	waitFor(t, 20*time.Second, func() bool {
		described, err = adm3.DescribeUserSCRAMs(ctx)
		return err == nil && len(described["alice"].CredInfos) == 1
	})
	if len(described) != 1 || described["alice"].CredInfos[0] != (kadm.CredInfo{Mechanism: kadm.ScramSha512, Iterations: 8192}) {
		t.Fatalf("broker 3 describes %+v", described)
	}
	// Each broker answers from its own replica of the controller's log: wait for broker 2's.
	var code int
	var body string
	waitFor(t, 20*time.Second, func() bool {
		code, body = adminRequest(t, bs[1], "GET", "/v1/security/users", "")
		return code != 200 || strings.Contains(body, `"name":"alice"`)
	})
	if code != 200 || !strings.Contains(body, `"name":"alice"`) || strings.Contains(body, "key") || strings.Contains(body, "salt") {
		t.Fatalf("admin list on broker 2: %d %s", code, body)
	}
	out := run(t, 30*time.Second, "", cairnBin, "security", "user", "list", "-b", bs[1].KafkaAddr)
	if out.Err != nil || !strings.Contains(out.Stdout, "alice  SCRAM-SHA-512  8192") {
		t.Fatalf("cli list: %v", out)
	}

	res, err = bs[1].Admin(t).AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}, {User: "nobody", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res["alice"].Err != nil || res["nobody"].Err != kerr.ResourceNotFound {
		t.Fatalf("delete results %+v", res)
	}
	adm1 := bs[0].Admin(t)
	waitFor(t, 20*time.Second, func() bool {
		d, err := adm1.DescribeUserSCRAMs(ctx, "alice")
		return err == nil && d["alice"].Err == kerr.ResourceNotFound
	})
}

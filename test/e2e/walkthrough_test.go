package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-io/cairn/test/harness"
)

// The "Securing a cluster" walk-through of docs/operations.md must work when copied as it
// stands: this test runs its shell blocks, unchanged and in order, in one bash, in an
// empty folder, with the freshly built cairn first on the PATH. The blocks check what a
// user would look at (the consumer's records, kcat's refusals) with grep, so a block
// whose check fails stops the script.

const walkthroughHeading = "## Securing a cluster"

// walkthroughBlocks returns the ```sh blocks of the section headed heading in doc.
func walkthroughBlocks(doc, heading string) ([]string, error) {
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		return nil, fmt.Errorf("no section %q", heading)
	}
	section := doc[start+1:]
	if end := strings.Index(section[len(heading):], "\n## "); end >= 0 {
		section = section[:len(heading)+end]
	}
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case !in && line == "```sh":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		return nil, errors.New("a ```sh block is not closed")
	}
	return blocks, nil
}

// walkthroughPorts lists the TCP ports the blocks use: literal five-digit ports after a
// colon or a comma, and those of the per-broker pattern 32${n}92 for n = 1, 2, 3.
func walkthroughPorts(script string) []int {
	var ports []int
	for _, m := range regexp.MustCompile(`[:,](\d{5})\b`).FindAllStringSubmatch(script, -1) {
		p, _ := strconv.Atoi(m[1])
		ports = append(ports, p)
	}
	for _, m := range regexp.MustCompile(`:(\d+)\$\{n\}(\d+)\b`).FindAllStringSubmatch(script, -1) {
		for n := 1; n <= 3; n++ {
			p, _ := strconv.Atoi(m[1] + strconv.Itoa(n) + m[2])
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

func TestWalkthroughParsesDocs(t *testing.T) {
	doc := "intro\n## Securing a cluster\ntext\n```sh\necho a\n```\n```go\nno\n```\n```sh\necho b\n```\n## Next\n```sh\necho c\n```\n"
	blocks, err := walkthroughBlocks(doc, walkthroughHeading)
	if err != nil || !slices.Equal(blocks, []string{"echo a\n", "echo b\n"}) {
		t.Fatalf("got %q, %v", blocks, err)
	}
	if _, err := walkthroughBlocks("## Other\n", walkthroughHeading); err == nil {
		t.Fatal("a missing section must be an error")
	}
	got := walkthroughPorts("--seeds localhost:32193,localhost:32293 --admin-addr localhost:32${n}44")
	if !slices.Equal(got, []int{32144, 32193, 32244, 32293, 32344}) {
		t.Fatalf("ports %v", got)
	}
}

func TestWalkthroughSecuringACluster(t *testing.T) {
	requireKcat(t)
	for _, tool := range []string{"bash", "openssl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: %s", tool, installHint)
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := walkthroughBlocks(string(raw), walkthroughHeading)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 8 {
		t.Fatalf("the walk-through has %d shell blocks; the steps are missing", len(blocks))
	}
	script := strings.Join(blocks, "")
	ports := walkthroughPorts(script)
	if len(ports) < 12 { // four per broker
		t.Fatalf("found only the ports %v in the walk-through", ports)
	}
	// The docs use fixed ports (a reader copies them); the harness hands out ports below
	// 32000, so only something else on the machine can hold them.
	for _, p := range ports {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			t.Skipf("port %d, which the walk-through uses, is taken: %v", p, err)
		}
		ln.Close()
	}

	dir := t.TempDir()
	// set -e makes the first failing command (a check by grep included) end the script;
	// the trap stops the brokers whatever happens, and waits for them, so that none
	// outlives the test or writes into its folder while it is removed.
	wrapped := "set -e\ntrap 'kill $(cat broker-*.pid 2>/dev/null) 2>/dev/null; wait' EXIT\n" + script
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", wrapped)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(cairnBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "CAIRN_") // the reader's shell has none of them
	})
	// Its own process group: on a timeout the brokers go down with the shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything left behind
	}
	if err != nil {
		logs := ""
		for n := 1; n <= 3; n++ {
			logs += fmt.Sprintf("\n--- broker-%d.log:\n%s", n, harness.TailFile(filepath.Join(dir, fmt.Sprintf("broker-%d.log", n)), 40))
		}
		t.Fatalf("the walk-through failed after %v: %v\n--- output:\n%s%s", time.Since(began).Round(time.Millisecond), err, out.String(), logs)
	}
	t.Logf("the walk-through ran in %v", time.Since(began).Round(time.Millisecond))

	// What the reader is told to expect.
	got := out.String()
	for _, want := range []string{
		`"code":401`, // the admin API before any user
		"user admin: SCRAM-SHA-512 credential set",
		"order-1", "order-2", // the consumer in group billing
		"Topic authorization failed", // producing to payments
		"GROUP_AUTHORIZATION_FAILED", // consuming in another group
		`topic "orders"`,             // Metadata as app
		"authentication failed",      // a wrong password
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the walk-through's output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `topic "payments"`) {
		t.Errorf("app was shown the topic payments, which it may not describe:\n%s", got)
	}
	// The brokers were stopped by the walk-through's last step (or the trap).
	for n := 1; n <= 3; n++ {
		pid, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("broker-%d.pid", n)))
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := strconv.Atoi(strings.TrimSpace(string(pid))); p > 0 && syscall.Kill(p, 0) == nil {
			t.Errorf("broker %d (pid %d) is still running", n, p)
		}
	}
}

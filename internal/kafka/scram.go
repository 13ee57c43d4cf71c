package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), v0, with Kafka's
// semantics (KIP-554, as its KRaft controller answers):
//
//   - Describe with null or empty users lists every user; a user named twice is
//     DUPLICATE_RESOURCE, a user without a credential RESOURCE_NOT_FOUND. Only mechanisms
//     and iterations are ever answered, never salts or keys.
//   - Alter takes deletions and upsertions; a user named more than once in one request (in
//     either list) is DUPLICATE_RESOURCE and none of its changes is made. An unknown
//     mechanism is UNSUPPORTED_SASL_MECHANISM, iterations out of [4096, 16384], an empty
//     user, salt or a salted password of the wrong length UNACCEPTABLE_CREDENTIAL, and
//     deleting what does not exist RESOURCE_NOT_FOUND. Users are independent: one refused
//     user does not stop the others. An upsertion carries the salted password; the broker
//     turns it into StoredKey and ServerKey and proposes only those.
//
// Authorisation hook: Kafka asks DESCRIBE (50) and ALTER (51) on the CLUSTER resource and
// answers every user CLUSTER_AUTHORIZATION_FAILED when it is denied. The ACL work adds that
// check at the top of both handlers, from principalOf(ctx).

// Kafka's numbering of SCRAM mechanisms on the wire (ScramMechanism.type).
var scramMechanismByType = map[int8]string{1: security.ScramSHA256, 2: security.ScramSHA512}

func scramMechanismType(name string) int8 {
	for t, n := range scramMechanismByType {
		if n == name {
			return t
		}
	}
	return 0
}

func handleDescribeUserSCRAMCredentials(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.authorizedCluster(ctx, kmsg.ACLOperationDescribe) {
		return respond(describeScramRefused(req, resp))
	}
	users := s.b.ScramUsers()
	result := func(name string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = name
		return r
	}
	if len(req.Users) == 0 {
		for _, u := range users {
			r := result(u.Name)
			for _, c := range u.Credentials {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = scramMechanismType(c.Mechanism), int32(c.Iterations)
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
			resp.Results = append(resp.Results, r)
		}
		return respond(resp)
	}
	byName := make(map[string]int, len(users))
	for i, u := range users {
		byName[u.Name] = i
	}
	seen := map[string]int{}
	for _, ru := range req.Users {
		seen[ru.Name]++
	}
	answered := map[string]bool{}
	for _, ru := range req.Users {
		if answered[ru.Name] {
			continue
		}
		answered[ru.Name] = true
		r := result(ru.Name)
		i, ok := byName[ru.Name]
		switch {
		case seen[ru.Name] > 1:
			r.ErrorCode, r.ErrorMessage = kerr.DuplicateResource.Code, strPtr("Cannot describe SCRAM credentials for the same user twice in a single request: "+ru.Name)
		case !ok:
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, strPtr("Attempt to describe a user credential that does not exist: "+ru.Name)
		default:
			for _, c := range users[i].Credentials {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = scramMechanismType(c.Mechanism), int32(c.Iterations)
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return respond(resp)
}

// scramChange is one user's change in an AlterUserScramCredentials request.
type scramChange struct {
	user      string
	mechanism string
	upsert    *security.ScramCredential
}

func handleAlterUserSCRAMCredentials(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !s.authorizedCluster(ctx, kmsg.ACLOperationAlter) {
		return respond(alterScramRefused(req, resp))
	}
	count := map[string]int{}
	for _, d := range req.Deletions {
		count[d.Name]++
	}
	for _, u := range req.Upsertions {
		count[u.Name]++
	}
	var order []string // users in first-seen order, each answered once
	outcome := map[string]*kmsg.AlterUserSCRAMCredentialsResponseResult{}
	var changes []scramChange
	add := func(user string) (*kmsg.AlterUserSCRAMCredentialsResponseResult, bool) {
		if _, done := outcome[user]; done {
			return nil, false
		}
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		outcome[user] = &r
		order = append(order, user)
		if count[user] > 1 {
			r.ErrorCode, r.ErrorMessage = kerr.DuplicateResource.Code, strPtr("A user credential cannot be altered twice in the same request")
			return nil, false
		}
		if user == "" {
			r.ErrorCode, r.ErrorMessage = kerr.UnacceptableCredential.Code, strPtr("Username must not be empty")
			return nil, false
		}
		return &r, true
	}
	fail := func(r *kmsg.AlterUserSCRAMCredentialsResponseResult, code *kerr.Error, msg string) {
		r.ErrorCode, r.ErrorMessage = code.Code, strPtr(msg)
	}
	for _, d := range req.Deletions {
		r, ok := add(d.Name)
		if !ok {
			continue
		}
		mech, known := scramMechanismByType[d.Mechanism]
		if !known {
			fail(r, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
			continue
		}
		changes = append(changes, scramChange{user: d.Name, mechanism: mech})
	}
	for _, u := range req.Upsertions {
		r, ok := add(u.Name)
		if !ok {
			continue
		}
		mech, known := scramMechanismByType[u.Mechanism]
		if !known {
			fail(r, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
			continue
		}
		switch {
		case u.Iterations < security.MinScramIterations:
			fail(r, kerr.UnacceptableCredential, "Too few iterations")
			continue
		case u.Iterations > security.MaxScramIterations:
			fail(r, kerr.UnacceptableCredential, "Too many iterations")
			continue
		}
		cred, err := security.ScramCredentialFromSalted(mech, int(u.Iterations), u.Salt, u.SaltedPassword)
		if err != nil {
			fail(r, kerr.UnacceptableCredential, err.Error())
			continue
		}
		changes = append(changes, scramChange{user: u.Name, mechanism: mech, upsert: &cred})
	}
	for _, c := range changes {
		r := outcome[c.user]
		var err error
		if c.upsert != nil {
			if e := s.b.UpsertScramCredential(c.user, *c.upsert); e != nil {
				fail(r, e.Code, e.Msg)
				err = e
			}
		} else if e := s.b.DeleteScramCredential(c.user, c.mechanism); e != nil {
			fail(r, e.Code, e.Msg)
			err = e
		}
		if err == nil {
			s.lg.Info("SCRAM credential changed", "user", c.user, "mechanism", c.mechanism, "deleted", c.upsert == nil, "principal", string(principalOf(ctx)))
		}
	}
	for _, user := range order {
		resp.Results = append(resp.Results, *outcome[user])
	}
	return respond(resp)
}

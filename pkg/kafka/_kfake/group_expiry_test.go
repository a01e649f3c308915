package kfake

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinWithTimeouts is classicJoin with the member's own session and
// rebalance timeouts.
func joinWithTimeouts(ctx context.Context, t *testing.T, cl *kgo.Client, what, groupID, memberID string, session, rebalance time.Duration) *kmsg.JoinGroupResponse {
	t.Helper()
	resp, err := tryJoinWithTimeouts(ctx, cl, groupID, memberID, session, rebalance)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return resp
}

func tryJoinWithTimeouts(ctx context.Context, cl *kgo.Client, groupID, memberID string, session, rebalance time.Duration) (*kmsg.JoinGroupResponse, error) {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = groupID
	join.MemberID = memberID
	join.SessionTimeoutMillis = int32(session.Milliseconds())
	join.RebalanceTimeoutMillis = int32(rebalance.Milliseconds())
	join.ProtocolType = "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	proto.Metadata = []byte{0, 0, 0, 0, 0, 0, 0, 0}
	join.Protocols = append(join.Protocols, proto)
	resp, err := join.RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = resp.MemberID
		resp, err = join.RequestWith(ctx, cl)
	}
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	return resp, err
}

// leaderSync sends the leader's SyncGroup, assigning nothing to anyone.
func leaderSync(ctx context.Context, t *testing.T, cl *kgo.Client, groupID string, join *kmsg.JoinGroupResponse) {
	t.Helper()
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group = groupID
	sync.MemberID = join.MemberID
	sync.Generation = join.Generation
	sync.ProtocolType = kmsg.StringPtr("consumer")
	sync.Protocol = join.Protocol
	for _, m := range join.Members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = m.MemberID
		sync.GroupAssignment = append(sync.GroupAssignment, a)
	}
	resp, err := sync.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// groupMembers lists the members DescribeGroups gives.
func groupMembers(ctx context.Context, t *testing.T, cl *kgo.Client, groupID string) map[string]bool {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("describe: %v", err)
	}
	members := map[string]bool{}
	for _, m := range resp.Groups[0].Members {
		members[m.MemberID] = true
	}
	return members
}

// A member whose JoinGroup is parked when its process dies is still in
// the generation the join completes (its response goes nowhere), and it
// then never heartbeats. Kafka schedules every member's heartbeat
// expiration when it completes the join, whether or not the response
// arrives (GroupCoordinator.onCompleteJoin), so the member expires after
// its session timeout. Without that, the dead member keeps its place
// and its partitions for good once the leader has synced.
func TestClassicMemberKilledMidJoinExpires(t *testing.T) {
	t.Parallel()
	const groupID = "g-classic-killed-mid-join"

	c, cl, ctx := newGuardCluster(t, GroupMinSessionTimeout(100*time.Millisecond))

	a := joinWithTimeouts(ctx, t, cl, "join a", groupID, "", 30*time.Second, 5*time.Second)
	leaderSync(ctx, t, cl, groupID, a)

	// b joins on a connection of its own, and dies parked in its join.
	clb := newPlainClient(t, c)
	go tryJoinWithTimeouts(ctx, clb, groupID, "", 500*time.Millisecond, 5*time.Second)
	var b string
	for b == "" {
		onGroup(t, c, groupID, func(g *group) {
			for id, m := range g.members {
				if id != a.MemberID && !m.waitingReply.empty() {
					b = id
				}
			}
		})
		if ctx.Err() != nil {
			t.Fatal("b never joined")
		}
		time.Sleep(10 * time.Millisecond)
	}
	clb.Close()

	// a rejoins: the join completes with b in it, and a, the leader,
	// syncs: the group is stable.
	a = joinWithTimeouts(ctx, t, cl, "rejoin a", groupID, a.MemberID, 30*time.Second, 5*time.Second)
	if len(a.Members) != 2 {
		t.Fatalf("the join completed with %d members, want a and b", len(a.Members))
	}
	leaderSync(ctx, t, cl, groupID, a)

	deadline := time.Now().Add(5 * time.Second)
	for groupMembers(ctx, t, cl, groupID)[b] {
		if time.Now().After(deadline) {
			t.Fatal("b, dead since it joined, is still a member 5s on; its session timeout is 500ms")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kafka sets a rebalance's deadline once, when the group starts preparing
// (GroupCoordinator.prepareRebalance creates one DelayedJoin of the
// group's rebalance timeout), and members joining meanwhile do not move
// it: at the deadline the join completes with the members that rejoined,
// and those that did not are removed. A coordinator that restarts the
// deadline at every join never completes a rebalance while members keep
// arriving (consumers restarted one after another), however long a
// member that will not rejoin holds it.
func TestClassicRebalanceDeadlineNotMovedByJoins(t *testing.T) {
	t.Parallel()
	const groupID = "g-classic-rebalance-deadline"

	c, cl, ctx := newGuardCluster(t)

	// a is stable, and will not rejoin.
	a := joinWithTimeouts(ctx, t, cl, "join a", groupID, "", 30*time.Second, time.Second)
	leaderSync(ctx, t, cl, groupID, a)

	// A new member every 200ms for 3s, each on its own connection.
	const arriving = 3 * time.Second
	clients := make([]*kgo.Client, 16)
	for i := range clients {
		clients[i] = newPlainClient(t, c)
	}
	start := time.Now()
	first := make(chan time.Duration, 1)
	go func() {
		if _, err := tryJoinWithTimeouts(ctx, clients[0], groupID, "", 30*time.Second, time.Second); err == nil {
			first <- time.Since(start)
		}
		close(first)
	}()
	for _, cl := range clients[1:] {
		time.Sleep(arriving / time.Duration(len(clients)-1))
		go tryJoinWithTimeouts(ctx, cl, groupID, "", 30*time.Second, time.Second)
	}
	took, ok := <-first
	if !ok {
		t.Fatal("the first new member's join failed")
	}
	if took >= arriving {
		t.Fatalf("the rebalance completed %v after it began, once members stopped arriving; its deadline was 1s", took.Round(time.Millisecond))
	}
}

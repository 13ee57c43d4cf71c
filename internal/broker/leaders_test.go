package broker

import (
	"log/slog"
	"testing"
)

// A peer's unchanged list, received again, is skipped; but once forget has dropped the
// peer's claims (it was not live), the same list restores them.
func TestLeaderTableSkipsAnUnchangedListUntilForgotten(t *testing.T) {
	tab := newLeaderTable()
	payload := encodeLeaders([]leaderEntry{{group: 5, term: 3, isr: []int32{2, 1}}})
	tab.receive(2, payload, slog.Default())
	if li, ok := tab.get(5); !ok || li.leader != 2 || li.term != 3 {
		t.Fatalf("after the first list: %+v %v, want broker 2 leading group 5 in term 3", li, ok)
	}
	ch := tab.changed()
	tab.receive(2, payload, slog.Default())
	select {
	case <-ch:
		t.Fatal("the same list, received again, changed the table")
	default:
	}
	tab.forget(map[int32]bool{1: true})
	if _, ok := tab.get(5); ok {
		t.Fatal("group 5 is still claimed by broker 2 after it stopped being live")
	}
	tab.receive(2, payload, slog.Default())
	if li, ok := tab.get(5); !ok || li.leader != 2 {
		t.Fatalf("after broker 2 is back with the same list: %+v %v, want it leading group 5", li, ok)
	}
}

// The leadership round publishes the same ISR slice while its members are unchanged (an
// idle broker allocates none), and a new one when they change, leaving the first as it was.
func TestPublishedISRsKeepUnchanged(t *testing.T) {
	m := publishedISRs{}
	first := m.keep(7, []uint64{1, 2, 3}, 1)
	again := m.keep(7, []uint64{1, 2, 3}, 2)
	if &first[0] != &again[0] {
		t.Error("an unchanged ISR was published as a new slice")
	}
	shrunk := m.keep(7, []uint64{1, 3}, 3)
	if len(shrunk) != 2 || shrunk[0] != 1 || shrunk[1] != 3 {
		t.Errorf("the shrunk ISR published as %v, want [1 3]", shrunk)
	}
	if len(first) != 3 || first[1] != 2 {
		t.Errorf("the slice published first was changed to %v", first)
	}
}

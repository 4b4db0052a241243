package docker

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// packetMessage builds what the kernel sends for one queued packet.
func packetMessage(queue uint16, id uint32) []byte {
	hdr := make([]byte, 7)
	binary.BigEndian.PutUint32(hdr, id)
	return nfMessage(nfqnlMsgPacket, queue, 0, 0, attr(nfqaPacketHdr, hdr))
}

func TestNetlinkPacketParse(t *testing.T) {
	b := append(packetMessage(101, 7), packetMessage(102, 8)...)
	msgs, err := syscallParseNetlink(b)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if m.Header.Type != unix.NFNL_SUBSYS_QUEUE<<8|nfqnlMsgPacket {
			t.Fatalf("message %d type %#x", i, m.Header.Type)
		}
		p, ok := queuedPacket(m)
		if !ok || p.queue != uint16(101+i) || p.id != uint32(7+i) {
			t.Fatalf("message %d: %+v %v", i, p, ok)
		}
	}
	if _, err := syscallParseNetlink(b[:len(b)-3]); err == nil {
		t.Fatal("a truncated message parsed")
	}
}

// FuzzNetlink feeds arbitrary datagrams to the netlink parsing the delay
// line does on what the kernel sends: it must never panic or loop.
func FuzzNetlink(f *testing.F) {
	f.Add(append(packetMessage(100, 1), packetMessage(101, 2)...))
	f.Add(packetMessage(100, 1)[:20])
	f.Add([]byte{16, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, _ := syscallParseNetlink(b)
		for _, m := range msgs {
			queuedPacket(m)
		}
	})
}

// FuzzDelays feeds arbitrary files to the delayer's targets decoder.
func FuzzDelays(f *testing.F) {
	f.Add([]byte(`{"targets":[{"name":"zt-a-0","pid":42,"queues":[{"num":100,"delay":500000}]}]}`))
	f.Add([]byte(`{"targets":[{"name":"","pid":0}]}`))
	f.Add([]byte(`{"targets":null,"extra":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := decodeTargets(b)
		if err != nil {
			return
		}
		for _, tg := range ts {
			if tg.Pid <= 0 || tg.Name == "" {
				t.Fatalf("accepted target %+v", tg)
			}
		}
	})
}

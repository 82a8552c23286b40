package auth_test

import (
	"fmt"

	"github.com/rdmablk/rdmablk/nvme/auth"
)

// Example shows one bidirectional transaction the way a host transport
// (Authentication Send/Receive) and a target's queue would drive it.
func Example() {
	hostSecret, err := auth.ParseSecret("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:")
	ctrlSecret, err2 := auth.ParseSecret("DHHC-1:00:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj/jBqb2:")
	if err != nil || err2 != nil {
		fmt.Println(err, err2)
		return
	}
	const hostNQN, subNQN = "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "nqn.2024-01.io.rdmablk:vol1"

	host, _ := auth.NewHost(auth.HostConfig{HostNQN: hostNQN, SubNQN: subNQN, Secret: hostSecret, CtrlSecret: &ctrlSecret}, 1)
	ctrl, _ := auth.NewController(auth.ControllerConfig{HostNQN: hostNQN, SubNQN: subNQN, Secret: hostSecret, CtrlSecret: &ctrlSecret,
		DHGroups: []auth.DHGroupID{auth.FFDHE2048}})

	neg, _ := host.Negotiate() // Authentication Send
	ctrl.Send(neg)
	chal, _ := ctrl.Receive() // Authentication Receive
	reply, _ := host.Challenge(chal)
	ctrl.Send(reply)
	s1, _ := ctrl.Receive()
	s2, err := host.Success1(s1)
	if err != nil {
		fmt.Println(err) // s2 is then the AUTH_Failure2 to send
		return
	}
	ctrl.Send(s2)
	fmt.Println(host.Authenticated(), ctrl.Authenticated(), ctrl.Hash(), ctrl.DHGroup())
	// Output: true true hmac(sha256) ffdhe2048
}

package main

import "github.com/rdmablk/rdmablk/cluster/catalog"

func apiNode(id, raftAddr, apiAddr string) catalog.Node {
	return catalog.Node{ID: id, RaftAddr: raftAddr, APIAddr: apiAddr}
}

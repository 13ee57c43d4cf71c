//go:build race

package raft

const raceEnabled = true

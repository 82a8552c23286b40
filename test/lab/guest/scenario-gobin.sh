#!/bin/bash
# Guest side of run-gobin.sh: eth0 + rxe0, then the binary named in $LAB_OUT/gobin.cmd
# (line 1: file in /mnt/share/bin, line 2: shell-quoted args, line 3: K=V environment).
. /mnt/share/scripts/lib.sh
{ read -r name; read -r args; read -r envs; } < "$LAB_OUT/gobin.cmd"
B=/mnt/share/bin/$name
net_up > /dev/null
rxe_up > "$LAB_OUT/rxe-up.txt" 2>&1 || { cat "$LAB_OUT/rxe-up.txt"; echo "run-gobin: rxe setup failed"; exit 125; }
echo "run-gobin: kernel $(uname -r), rxe0 on eth0 ($IP): $(rdma link show rxe0/1 | grep -o ' state [A-Z]*' | head -1)"
cd "$LAB_OUT"
eval "set -- $args"
env $envs "$B" "$@" 2>&1
rc=$?
echo "run-gobin: exit code $rc"
exit $rc

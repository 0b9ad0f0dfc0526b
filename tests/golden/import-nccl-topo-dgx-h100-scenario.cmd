import nccl-topo tests/data/real-cases/import/dgx-h100-dump.xml --gpu H100-SXM5 --as scenario --nodes 2

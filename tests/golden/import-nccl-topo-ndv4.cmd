import nccl-topo tests/data/real-cases/import/ndv4-topo.xml --gpu A100-SXM4-80GB --nic ib-hdr --nvlink nvswitch --cpu epyc-7742

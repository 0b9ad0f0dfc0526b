sweep scenarios/workloads/llama3-70b-train-64xh100.yaml --set strategy.pp=1,2 --set strategy.dp=auto --set cluster.nodes[0].node.nics.link=ib-hdr,ib-ndr --format csv

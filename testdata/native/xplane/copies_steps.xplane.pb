
¸/device:GPU:0ˆ	Stream #0ˆ'"4À„=€‰z"(*$grid:1,1,1 block:256,1,1 group_mem:0"&€’ôÀ„="*num_bytes:256 async:1"€›îĞ¢«"
€ÚÄ	è")%!__amd_rocclr_fillBufferAligned.kd"
Memset"Cijk_Ailk_Bljk_HHS_BH"MemAlloc*kernel_details*memset_details
^	/device:CUSTOM:Megascale TraceRegionˆ'"À·""ThreadpoolListener::Region"host0
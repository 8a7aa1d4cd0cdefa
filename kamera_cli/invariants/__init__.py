"""kamera_cli.invariants"""

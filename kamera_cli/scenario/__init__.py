"""kamera_cli.scenario"""

"""kamera_cli.sim"""

"""kamera_cli.adapters"""

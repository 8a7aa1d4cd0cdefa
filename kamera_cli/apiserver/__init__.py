"""kamera_cli.apiserver"""

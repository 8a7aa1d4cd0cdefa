"""kamera_cli.explore"""

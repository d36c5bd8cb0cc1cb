"""projection"""

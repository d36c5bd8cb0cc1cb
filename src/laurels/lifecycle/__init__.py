"""lifecycle"""

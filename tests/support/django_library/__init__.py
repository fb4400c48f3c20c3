"""A small Django app (authors, books, tags) and its two migrations, for
tests/oracle/test_django.py: what a Django 5 project's `migrate` and ORM send, against Heron and
PostgreSQL 15."""

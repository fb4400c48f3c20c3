"""The app's models as its second migration leaves them."""

from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100, unique=True)
    birth_date = models.DateField(null=True)


class Tag(models.Model):
    label = models.SlugField(unique=True)


class Book(models.Model):
    title = models.CharField(max_length=300, db_index=True)
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="books")
    editor = models.ForeignKey(Author, on_delete=models.SET_NULL, null=True, related_name="edited")
    pages = models.PositiveIntegerField(default=0)
    published = models.DateTimeField(auto_now_add=True)
    isbn = models.CharField(max_length=13, null=True, unique=True)
    tags = models.ManyToManyField(Tag, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["title", "author"],
                                               name="uniq_title_author")]
        indexes = [models.Index(fields=["pages", "published"], name="book_pages_pub")]

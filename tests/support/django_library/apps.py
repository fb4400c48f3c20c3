from django.apps import AppConfig


class LibraryConfig(AppConfig):
    name = "support.django_library"
    label = "library"
    default_auto_field = "django.db.models.BigAutoField"

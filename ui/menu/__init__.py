"""The ☰ menu (``menu.build``) and the settings it holds: recent runs and demos (``recent``), the theme
(``appearance``), the language (``language_menu``) and the shortcut sheet (``shortcuts``)."""
